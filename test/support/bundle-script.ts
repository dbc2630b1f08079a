/**
 * A TypeScript script that a spec starts as a child process, bundled into one ES module first (esbuild: the script
 * and the loopctl sources it imports; the packages of node_modules left as imports), so that the child starts with
 * plain `node FILE` instead of `node --import tsx FILE`. tsx resolves and transforms each of the ~100 source modules
 * a session peer imports through its loader thread on every start: about 2 s of CPU time per child on the 2-core
 * machine, against a few tenths of a second for the bundle.
 *
 * The bundle is written to `.cache/scripts/` in the repository (gitignored), so that its package imports resolve to
 * the repository's node_modules, under a name made of the script's name and a hash of the bundle's text: parallel
 * spec files that bundle the same script write the same file (atomically: a temp file renamed into place), and a
 * change of the script or of a source it imports gives a new file. Bundled once per test process and script.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { build } from 'esbuild';
import { repoRoot } from './openai-server.js';

const OUT_DIR = path.join(repoRoot, '.cache', 'scripts');
const bundles = new Map<string, Promise<string>>();

/** The path of `script` (an absolute `.ts` path) bundled into one `.mjs` file; see the module comment. */
export function bundledScript(script: string): Promise<string> {
  let bundle = bundles.get(script);
  if (!bundle) {
    bundle = bundle_(script);
    bundles.set(script, bundle);
  }
  return bundle;
}

async function bundle_(script: string): Promise<string> {
  const result = await build({
    entryPoints: [script],
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    packages: 'external',
    sourcemap: 'inline',
    write: false,
    logLevel: 'silent',
  });
  const text = result.outputFiles[0]!.text;
  const hash = createHash('sha256').update(text).digest('hex').slice(0, 16);
  const file = path.join(OUT_DIR, `${path.basename(script, '.ts')}-${hash}.mjs`);
  if (!existsSync(file)) {
    mkdirSync(OUT_DIR, { recursive: true });
    const temp = `${file}.${process.pid}.tmp`;
    writeFileSync(temp, text);
    renameSync(temp, file);
  }
  return file;
}
