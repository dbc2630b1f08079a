/**
 * The packed package in a fresh `npm init -y` project (CommonJS), installed offline from the tarball:
 * `require()` of each entry, and the README's "Use" snippet as CommonJS (.ts) and as ESM (.mts),
 * typechecked with `--module nodenext` and run with plain node.
 */
import { execFile, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { ensureBuilt } from '../cli-helpers.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const exec = promisify(execFile);

/** npm settings a child keeps from `npm test`'s environment: where the cache and config are. */
const KEPT = new Set(['npm_config_cache', 'npm_config_userconfig', 'npm_config_globalconfig', 'npm_config_registry']);

/** A child's environment without `npm test`'s lifecycle and prefix variables (they would point npm at the repo). */
function npmEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const key of Object.keys(env)) {
    if (key.toLowerCase().startsWith('npm_') && !KEPT.has(key.toLowerCase())) delete env[key];
  }
  delete env.INIT_CWD;
  return env;
}

async function run(file: string, args: string[], cwd: string): Promise<{ stdout: string; stderr: string }> {
  try {
    return await exec(file, args, { cwd, env: npmEnv(), timeout: 300_000, maxBuffer: 16 * 1024 * 1024 });
  } catch (error) {
    const e = error as Error & { stdout?: string; stderr?: string };
    const command = `${path.basename(file)} ${args.join(' ')}`;
    throw new Error(`${command} (in ${cwd}) failed: ${e.message}\n${e.stdout}\n${e.stderr}`, { cause: error });
  }
}

/**
 * `npm pack` of a copy of the package's inputs with the `dist/` `npm run build` makes (ensureBuilt: tsc and the
 * web app, a no-op when it is up to date), packed with `--ignore-scripts`: prepack would run the typecheck and the
 * same build again, which `npm test`'s tsc and `npm run build` already do. A copy, so `npm pack` never writes in
 * the repository the other specs run.
 */
async function pack(tmp: string): Promise<string> {
  await ensureBuilt({ web: true });
  const pkg = path.join(tmp, 'pkg');
  mkdirSync(pkg);
  for (const entry of ['package.json', 'README.md', 'LICENSE', 'dist']) {
    if (existsSync(path.join(root, entry))) cpSync(path.join(root, entry), path.join(pkg, entry), { recursive: true });
  }
  const { stdout } = await run('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', tmp], pkg);
  const [{ filename }] = JSON.parse(stdout.slice(stdout.indexOf('['))) as [{ filename: string }];
  return path.join(tmp, filename);
}

/**
 * A lockfile for the consumer made of the repository's own production entries: npm resolves an
 * install without a lockfile from full packuments, which `npm ci` never caches; with one, it needs
 * only the tarballs `npm ci` put in the npm cache, so `--offline` works.
 */
function writeConsumerLock(consumer: string, tarball: string): void {
  const own = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as Record<string, unknown>;
  const lock = JSON.parse(readFileSync(path.join(root, 'package-lock.json'), 'utf8')) as {
    packages: Record<string, { dev?: boolean }>;
  };
  const me = JSON.parse(readFileSync(path.join(consumer, 'package.json'), 'utf8')) as Record<string, string>;
  const spec = `file:${path.relative(consumer, tarball)}`;
  const integrity = `sha512-${createHash('sha512').update(readFileSync(tarball)).digest('base64')}`;
  const packages: Record<string, unknown> = {
    '': { name: me.name, version: me.version, license: me.license, dependencies: { loopctl: spec } },
    'node_modules/loopctl': {
      version: own.version,
      resolved: spec,
      integrity,
      license: own.license,
      dependencies: own.dependencies,
      bin: own.bin,
      engines: own.engines,
    },
  };
  for (const [at, entry] of Object.entries(lock.packages)) if (at !== '' && !entry.dev) packages[at] = entry;
  const consumerLock = { name: me.name, version: me.version, lockfileVersion: 3, requires: true, packages };
  writeFileSync(path.join(consumer, 'package-lock.json'), JSON.stringify(consumerLock, null, 2));
}

/** What `node -e` prints for each entry when required from the consumer. */
const ENTRIES = [
  'loopctl',
  'loopctl/testing',
  'loopctl/node',
  'loopctl/node/testing',
  'loopctl/postgres',
  'loopctl/operators',
];
const DIST_FILES = [
  'index.js',
  'testing/index.js',
  'node/index.js',
  'node/testing/index.js',
  'postgres/index.js',
  'operators/index.js',
];
const REQUIRE_SCRIPT = `
const entries = ${JSON.stringify(ENTRIES)};
Promise.all(entries.map(async (entry) => {
  const required = require(entry);
  const imported = await import(entry);
  return { entry, file: require.resolve(entry), keys: Object.keys(required).sort(), same: required === imported };
})).then((out) => console.log(JSON.stringify(out)));
`;

/** Imports `entry` in a consumer without its optional peer and prints the error's code and first words. */
const importScript = (entry: string) => `
import('${entry}').then(
  () => console.log('loaded'),
  (e) => console.log(e.code, e.message.split(' imported from')[0]),
);
`;
const SQLITE_SCRIPT = importScript('loopctl/sqlite');

/**
 * Starts `loopctl serve --port 0` in `cwd`; once it prints its address, opens it (token → cookie), reads
 * the page and its script, then stops it with SIGINT. Resolves with the exit code and what it read (or, when
 * it exits first, its stderr).
 */
async function serveOnce(bin: string, cwd: string) {
  const child = spawn(bin, ['serve', '--port', '0'], { cwd, env: npmEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let stderr = '';
  let printed!: (address: string) => void;
  const listening = new Promise<string>((resolve) => (printed = resolve));
  // The address, on the output that completes it (no polling).
  child.stdout.setEncoding('utf8').on('data', (d: string) => {
    out += d;
    if (/\?token=\S+/.test(out)) printed(/http:\/\/\S+/.exec(out)![0]);
  });
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
  const address = await Promise.race([listening, exited.then(() => undefined)]);
  if (address === undefined) return { code: await exited, stderr };
  const login = await fetch(address, { redirect: 'manual' });
  const cookie = login.headers
    .getSetCookie()
    .map((c) => c.split(';')[0])
    .join('; ');
  const page = await (await fetch(new URL('/', address), { headers: { cookie } })).text();
  const script = /src="(\/assets\/[^"]+\.js)"/.exec(page)?.[1] ?? '/missing.js';
  const js = await fetch(new URL(script, address), { headers: { cookie } });
  const asset = `${js.status} ${js.headers.get('content-type')} ${(await js.arrayBuffer()).byteLength} bytes`;
  child.kill('SIGINT');
  return { code: await exited, page, asset };
}

describe('CommonJS and ESM consumers of the packed package (Node >= 20.19, require of an ES module)', () => {
  it('require() loads each entry, and the README snippet typechecks and runs as CommonJS and as ESM', async () => {
    const tmp = mkdtempSync(path.join(tmpdir(), 'loopctl-consumer-'));
    try {
      const tarball = await pack(tmp);
      const consumer = path.join(tmp, 'consumer');
      mkdirSync(consumer);
      await run('npm', ['init', '-y'], consumer);
      writeConsumerLock(consumer, tarball);
      await run('npm', ['install', '--offline', '--no-audit', '--no-fund', tarball], consumer);

      const required = JSON.parse((await run(process.execPath, ['-e', REQUIRE_SCRIPT], consumer)).stdout) as {
        entry: string;
        file: string;
        keys: string[];
        same: boolean;
      }[];
      const sources = [
        await import('../../src/index.js'),
        await import('../../src/testing/index.js'),
        await import('../../src/node/index.js'),
        await import('../../src/node/testing/index.js'),
        await import('../../src/postgres/index.js'),
        await import('../../src/operators/index.js'),
      ];
      expect(required).toEqual(
        DIST_FILES.map((file, i) => ({
          entry: ENTRIES[i],
          file: path.join(consumer, 'node_modules/loopctl/dist', file),
          keys: Object.keys(sources[i]!).sort(),
          same: true, // require() and import() give the same module: one copy of the package, never two
        })),
      );

      // better-sqlite3 is an optional peer dependency: without it only loopctl/sqlite fails, and says what is missing.
      const sqlite = await run(process.execPath, ['-e', SQLITE_SCRIPT], consumer);
      expect(sqlite.stdout).toBe("ERR_MODULE_NOT_FOUND Cannot find package 'better-sqlite3'\n");
      // So is @opentelemetry/api: only loopctl/otel needs it (the core never imports it).
      const otel = await run(process.execPath, ['-e', importScript('loopctl/otel')], consumer);
      expect(otel.stdout).toBe("ERR_MODULE_NOT_FOUND Cannot find package '@opentelemetry/api'\n");
      // And @google/genai: only loopctl/gemini needs it.
      const genai = await run(process.execPath, ['-e', importScript('loopctl/gemini')], consumer);
      expect(genai.stdout).toBe("ERR_MODULE_NOT_FOUND Cannot find package '@google/genai'\n");
      // And @anthropic-ai/sdk: only loopctl/anthropic needs it.
      const anthropic = await run(process.execPath, ['-e', importScript('loopctl/anthropic')], consumer);
      expect(anthropic.stdout).toBe("ERR_MODULE_NOT_FOUND Cannot find package '@anthropic-ai/sdk'\n");

      const readme = readFileSync(path.join(root, 'README.md'), 'utf8');
      const snippet = /^## Use\n[\s\S]*?```ts\n([\s\S]*?)```/m.exec(readme)?.[1];
      expect(snippet).toContain("from 'loopctl'");
      writeFileSync(path.join(consumer, 'use.ts'), snippet!); // CommonJS: `npm init -y` makes a CommonJS package
      writeFileSync(path.join(consumer, 'use.mts'), snippet!);
      const tsc = path.join(root, 'node_modules/typescript/bin/tsc');
      const types = ['--types', 'node', '--typeRoots', path.join(root, 'node_modules/@types')];
      const options = ['--module', 'nodenext', '--moduleResolution', 'nodenext', '--strict', '--skipLibCheck'];
      // Typechecks both files (any type error fails it), then writes out/use.js (CommonJS) and out/use.mjs.
      const emit = ['--noEmitOnError', '--outDir', 'out', 'use.ts', 'use.mts'];
      const check = await run(process.execPath, [tsc, ...options, ...types, ...emit], consumer);
      expect(check.stdout).toBe('');
      expect(readFileSync(path.join(consumer, 'out/use.js'), 'utf8')).toContain('require("loopctl")');
      for (const file of ['out/use.js', 'out/use.mjs']) {
        expect((await run(process.execPath, [file], consumer)).stdout).toBe('2 + 3 = 5\n[stop] 4 items saved\n');
      }

      // loopctl serve: without the optional AG-UI peers it says what to install; with them it serves the
      // web app the package ships (built by `npm run build`), with no build step.
      const bin = path.join(consumer, 'node_modules/.bin/loopctl');
      const withoutPeers = await serveOnce(bin, consumer);
      expect(withoutPeers).toEqual({
        code: 2,
        stderr:
          'loopctl: loopctl serve needs @ag-ui/core and @ag-ui/encoder (@ag-ui/core is not installed): ' +
          'npm install @ag-ui/core@1.0.0 @ag-ui/encoder@1.0.0\n',
      });
      mkdirSync(path.join(consumer, 'node_modules/@ag-ui'));
      for (const peer of ['core', 'encoder']) {
        const link = path.join(consumer, 'node_modules/@ag-ui', peer);
        symlinkSync(path.join(root, 'node_modules/@ag-ui', peer), link, 'dir');
      }
      const served = await serveOnce(bin, consumer);
      expect(served.code).toBe(130);
      const script = /<script type="module" crossorigin src="\/assets\/index-[\w-]+\.js">/;
      expect(served.page).toMatch(/^<!doctype html>/);
      expect(served.page).toMatch(script);
      expect(served.asset).toMatch(/^200 text\/javascript; charset=utf-8 \d{5,} bytes$/);
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  }, 480_000);
});
