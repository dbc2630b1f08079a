#!/usr/bin/env node
/* global process, console */
// The `loopctl` bin as the package ships it: `dist/bin/loopctl.js`, an esbuild bundle of the compiled CLI
// (`dist/cli/main.js`, which tsc emits first) split into chunks, so that a start reads a few files instead of some
// 540 ES modules (half of a start's CPU time on Node 20, which has no compile cache).
//
// - Bundled: loopctl's own code and the packages of `dependencies` (openai, the MCP SDK, zod, rxjs, ...) with what
//   they import: the exact versions package.json pins, which npm installs beside the bin anyway. rxjs is taken as
//   its ES modules (its `es2015` export) rather than its CommonJS build, so the operators the CLI never uses are
//   left out.
// - Not bundled (imported from node_modules at run time, as from `dist/cli/`): the peer dependencies (Anthropic,
//   Gemini, BullMQ, pg, better-sqlite3 and its native addon, OpenTelemetry, gpt-tokenizer: the user's own
//   versions, installed or not) and whatever else loopctl's code imports that is not a dependency (BullMQ's
//   ioredis); the `--otel` modules, loaded by name with `import()`.
// - Lazy: what the CLI imports with `import()` (the Anthropic and Gemini adapters, the SQLite and Postgres stores,
//   `serve`, `worker`, the OpenTelemetry adapter) stays in chunks of its own, loaded only when used.
//
// The chunks sit beside the entry, in `dist/bin/`: two levels below the package root, as `dist/cli/` is, so the
// paths the CLI takes from `import.meta.url` (`../../package.json`, the package folder, `dist/web`) still hold.
// The licences of the bundled packages are written to `dist/bin/THIRD-PARTY-LICENSES.txt`.
//
// `node scripts/bundle-bin.mjs --if-stale` does nothing when the bundle is newer than every compiled file of
// `dist/` and than package-lock.json and this script (the CLI specs' `ensureBuilt` and `npm start` use it).
import { existsSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const dist = path.join(root, 'dist');
const outdir = path.join(dist, 'bin');
const entry = path.join(dist, 'cli', 'main.js');
const bin = path.join(outdir, 'loopctl.js');
const pkg = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8'));
const dependencies = new Set(Object.keys(pkg.dependencies ?? {}));
const peers = new Set(Object.keys(pkg.peerDependencies ?? {}));

/** The newest modification time (ms) of the compiled `.js` files under `dir`, outside `dist/bin` and `dist/web`. */
function newestCompiled(dir) {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const file = path.join(dir, entry.name);
    if (entry.isDirectory()) {
      if (file !== outdir && file !== path.join(dist, 'web')) newest = Math.max(newest, newestCompiled(file));
    } else if (entry.name.endsWith('.js')) newest = Math.max(newest, statSync(file).mtimeMs);
  }
  return newest;
}

function isStale() {
  const built = statSync(bin, { throwIfNoEntry: false })?.mtimeMs;
  if (built === undefined) return true;
  const inputs = [path.join(root, 'package-lock.json'), fileURLToPath(import.meta.url)];
  return Math.max(newestCompiled(dist), ...inputs.map((f) => statSync(f).mtimeMs)) > built;
}

/** `name` of a bare specifier (`@scope/name/sub` → `@scope/name`). */
const packageName = (specifier) => specifier.split('/', specifier.startsWith('@') ? 2 : 1).join('/');

/** Keeps peers and non-dependencies external; resolves rxjs to its ES modules. */
const packagesPlugin = {
  name: 'loopctl-packages',
  setup(b) {
    b.onResolve({ filter: /^[^./]/ }, (args) => {
      if (args.path.startsWith('node:') || args.kind === 'entry-point') return undefined;
      const name = packageName(args.path);
      const fromOwnCode = !args.importer.split(path.sep).includes('node_modules');
      if (peers.has(name) || (fromOwnCode && !dependencies.has(name))) return { path: args.path, external: true };
      if (name === 'rxjs') {
        const rxjsDir = path.join(root, 'node_modules', 'rxjs');
        const exports = JSON.parse(readFileSync(path.join(rxjsDir, 'package.json'), 'utf8')).exports;
        const target = exports[`.${args.path.slice(name.length)}`]?.es2015;
        if (typeof target === 'string') return { path: path.join(rxjsDir, target) };
      }
      return undefined;
    });
  },
};

/** The licence texts of the bundled packages (from the build's metafile), one after the other. */
function thirdPartyLicenses(metafile) {
  const dirs = new Set();
  for (const input of Object.keys(metafile.inputs)) {
    const parts = input.split('/');
    const at = parts.lastIndexOf('node_modules');
    if (at < 0) continue;
    const length = parts[at + 1].startsWith('@') ? 2 : 1;
    dirs.add(parts.slice(0, at + 1 + length).join('/'));
  }
  const sections = [...dirs].sort().map((dir) => {
    const meta = JSON.parse(readFileSync(path.join(root, dir, 'package.json'), 'utf8'));
    const file = readdirSync(path.join(root, dir)).find((f) => /^(licen[cs]e|copying)/i.test(f));
    const text = file ? readFileSync(path.join(root, dir, file), 'utf8').trim() : `License: ${meta.license}`;
    return `${meta.name}@${meta.version} (${meta.license})\n\n${text}\n`;
  });
  return (
    `The loopctl bin (dist/bin/) bundles these packages; their licences follow.\n\n` +
    sections.join(`\n${'-'.repeat(79)}\n\n`)
  );
}

if (process.argv.includes('--if-stale') && !isStale()) process.exit(0);
if (!existsSync(entry)) {
  console.error(`bundle-bin: ${path.relative(root, entry)} is missing (run tsc -b tsconfig.build.json first)`);
  process.exit(1);
}
// esbuild's API is loaded only when there is something to bundle (a check that finds the bundle fresh costs a stat).
const { build } = await import('esbuild');
rmSync(outdir, { recursive: true, force: true });
const result = await build({
  absWorkingDir: root,
  entryPoints: { loopctl: entry },
  outdir,
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20.19',
  // CommonJS packages inside the bundle (ajv, ...) call `require` for Node's built-ins.
  banner: {
    js:
      "import { createRequire as __loopctlRequire } from 'node:module';\n" +
      'const require = __loopctlRequire(import.meta.url);',
  },
  plugins: [packagesPlugin],
  metafile: true,
  logLevel: 'warning',
});
writeFileSync(path.join(outdir, 'THIRD-PARTY-LICENSES.txt'), thirdPartyLicenses(result.metafile));
