/**
 * The library under test, as users run it: `src/` compiled by `tsc` (the
 * package's own tsconfig.build.json) into node_modules/.cache/loopctl-bench.
 *
 * Why not import `src/` through tsx: tsx compiles with esbuild's `keepNames`,
 * which wraps every closure the engine creates in `__name(fn, "…")` (an
 * `Object.defineProperty` per closure): measurably slower than the shipped
 * JavaScript. `BENCH_LIB=src` runs the benchmarks on `src/` through tsx anyway.
 *
 * The build runs once per `npm run bench` (bench/index.ts); a benchmark run
 * directly builds it when it is missing.
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type * as Core from '../../src/index.js';
import type * as Testing from '../../src/testing/index.js';

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const BUILD_DIR = path.join(repoRoot, 'node_modules/.cache/loopctl-bench');

/** Compiles src/ into {@link BUILD_DIR} (incremental). */
export function buildLibrary(): void {
  const tsc = path.join(repoRoot, 'node_modules/typescript/bin/tsc');
  execFileSync(
    process.execPath,
    [tsc, '-p', path.join(repoRoot, 'tsconfig.build.json'), '--outDir', BUILD_DIR, '--declaration', 'false', '--sourceMap', 'false',
      '--incremental', '--tsBuildInfoFile', path.join(BUILD_DIR, '.tsbuildinfo')],
    { stdio: 'inherit', cwd: repoRoot },
  );
}

// tsx turns source maps on (process.sourceMapsEnabled): every `err.stack` then walks
// source maps. Node's stream destroy() reads `err.stack`, so an aborted fetch would
// pay for it. The measured library is plain JavaScript: measure it as plain node runs it.
if (process.env['BENCH_SOURCE_MAPS'] !== '1') process.setSourceMapsEnabled(false);

const fromSource = process.env['BENCH_LIB'] === 'src';
/** BENCH_LIB_DIR: another compiled build to measure (e.g. a patched engine, for an A/B comparison). */
const dir = process.env['BENCH_LIB_DIR'] ? path.resolve(process.env['BENCH_LIB_DIR']) : BUILD_DIR;
if (!fromSource && dir === BUILD_DIR && !existsSync(path.join(BUILD_DIR, 'index.js'))) buildLibrary();
const load = (rel: string): Promise<unknown> =>
  fromSource ? import(pathToFileURL(path.join(repoRoot, 'src', `${rel}.ts`)).href) : import(pathToFileURL(path.join(dir, `${rel}.js`)).href);

/** Another entry of the measured build by its path under src/ without extension (`'http/index'`, `'sqlite/index'`). */
export const loadEntry = load;
/** `loopctl` (compiled, or src/ with BENCH_LIB=src). */
export const lib = (await load('index')) as typeof Core;
/** `loopctl/testing`. */
export const testing = (await load('testing/index')) as typeof Testing;
/** Which build is measured, for the tables. */
export const LIB_LABEL = fromSource ? 'src/ via tsx (esbuild keepNames)' : `tsc output (${path.relative(repoRoot, dir)})`;
