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
 * change of the script or of a source it imports gives a new file. Bundled once per test process and script text (a
 * script rewritten at the same path is bundled again). A script in a temporary folder gives a new file on every run
 * (the bundle names its sources' paths), so bundles no start used for an hour (their mtime, renewed at each use) are
 * removed whenever a new one is written: `.cache/scripts/` holds about what the last hour's runs used.
 */
import { createHash } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import { build } from 'esbuild';
import { repoRoot } from './openai-server.js';

const OUT_DIR = path.join(repoRoot, '.cache', 'scripts');
/** A bundle no start used for this long is removed when a new one is written, in ms. */
const UNUSED_FOR_MS = 3_600_000;
/** The bundles made by this process: by script path, with the script's text they were made of. */
const bundles = new Map<string, { readonly text: string; readonly file: Promise<string> }>();

/** The path of `script` (an absolute `.ts` path) bundled into one `.mjs` file; see the module comment. */
export async function bundledScript(script: string): Promise<string> {
  const text = readFileSync(script, 'utf8');
  const made = bundles.get(script);
  if (made?.text === text) {
    const file = await made.file;
    if (existsSync(file)) return (markUsed(file), file);
  }
  const file = bundle_(script);
  bundles.set(script, { text, file });
  return file;
}

/** Renews `file`'s mtime: it was used now (a file removed meanwhile is left alone). */
function markUsed(file: string): void {
  const now = new Date();
  try {
    utimesSync(file, now, now);
  } catch {
    // removed by another process: the next start bundles it again
  }
}

/** Removes the files of {@link OUT_DIR} that no start used for {@link UNUSED_FOR_MS} (other processes' too). */
function removeUnused(): void {
  const before = Date.now() - UNUSED_FOR_MS;
  for (const name of readdirSync(OUT_DIR)) {
    const file = path.join(OUT_DIR, name);
    try {
      if (statSync(file).mtimeMs < before) rmSync(file, { force: true });
    } catch {
      // removed meanwhile by another process
    }
  }
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
  if (existsSync(file)) return (markUsed(file), file);
  mkdirSync(OUT_DIR, { recursive: true });
  const temp = `${file}.${process.pid}.tmp`;
  writeFileSync(temp, text);
  renameSync(temp, file);
  removeUnused();
  return file;
}
