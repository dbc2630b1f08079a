/**
 * The library under test, as users run it: `src/` compiled by `tsc` (the
 * package's own tsconfig.build.json) into node_modules/.cache/loopctl-bench.
 *
 * Why not import `src/` through tsx: tsx compiles with esbuild's `keepNames`,
 * which wraps every closure the engine creates in `__name(fn, "…")` (an
 * `Object.defineProperty` per closure): measurably slower than the shipped
 * JavaScript. `BENCH_LIB=src` runs the benchmarks on `src/` through tsx anyway.
 *
 * A second build can be loaded next to it, in the same process, for a
 * comparison measured in the same session (interleaved rounds):
 * `BENCH_BASELINE_DIR=<dir>`, a compiled build of another commit (BENCHMARKS.md
 * shows how the pre-reshape engine is built into /tmp/pre-reshape/dist). Both
 * builds share this repository's `rxjs`, `openai` and `zod` (the baseline's
 * `node_modules` is a link to this one's), so only loopctl's own code differs.
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

/**
 * The arguments of TypeScript 5.9's `tsc` (`node_modules/typescript/bin/tsc`, the compiler of `npm run build`) that
 * compile the library of the checkout at `root` into `outDir` as the benchmarks load it: JavaScript only (no
 * declarations, no source maps, so no `inlineSources` either: tsc refuses it without maps), types not checked
 * (`npm test` checks them). Used for this checkout and for the other commit of `compare` (./compare.ts).
 */
export function emitArgs(root: string, outDir: string): string[] {
  const config = path.join(root, 'tsconfig.build.json');
  const off = ['--declaration', '--sourceMap', '--inlineSources'].flatMap((option) => [option, 'false']);
  return [
    path.join(repoRoot, 'node_modules/typescript/bin/tsc'),
    '-p',
    config,
    '--outDir',
    outDir,
    ...off,
    '--noCheck',
  ];
}

/** Compiles src/ into {@link BUILD_DIR} (incremental). */
export function buildLibrary(): void {
  const incremental = ['--incremental', '--tsBuildInfoFile', path.join(BUILD_DIR, '.tsbuildinfo')];
  execFileSync(process.execPath, [...emitArgs(repoRoot, BUILD_DIR), ...incremental], {
    stdio: 'inherit',
    cwd: repoRoot,
  });
}

// tsx turns source maps on (process.sourceMapsEnabled): every `err.stack` then walks
// source maps. Node's stream destroy() reads `err.stack`, so an aborted fetch would
// pay for it. The measured library is plain JavaScript: measure it as plain node runs it.
if (process.env['BENCH_SOURCE_MAPS'] !== '1') process.setSourceMapsEnabled(false);

/** One loaded build of loopctl: its main entry, `loopctl/testing`, and a label for the tables. */
export interface Build {
  readonly lib: typeof Core;
  readonly testing: typeof Testing;
  readonly label: string;
  /** Short name for table rows: `loopctl`, or the baseline's (`pre-reshape`, or BENCH_BASELINE_NAME). */
  readonly name: string;
  /** Another entry by its path under src/ without extension (`'http/index'`). */
  readonly load: (rel: string) => Promise<unknown>;
}

const fromSource = process.env['BENCH_LIB'] === 'src';
/** BENCH_LIB_DIR: another compiled build to measure (e.g. a patched engine, for an A/B comparison). */
const dir = process.env['BENCH_LIB_DIR'] ? path.resolve(process.env['BENCH_LIB_DIR']) : BUILD_DIR;
if (!fromSource && dir === BUILD_DIR && !existsSync(path.join(BUILD_DIR, 'index.js'))) buildLibrary();

async function loadBuild(name: string, at: string | 'src', label: string): Promise<Build> {
  const load = (rel: string): Promise<unknown> =>
    at === 'src'
      ? import(pathToFileURL(path.join(repoRoot, 'src', `${rel}.ts`)).href)
      : import(pathToFileURL(path.join(at, `${rel}.js`)).href);
  return {
    lib: (await load('index')) as typeof Core,
    testing: (await load('testing/index')) as typeof Testing,
    label,
    name,
    load,
  };
}

/** The measured build (compiled, or src/ with BENCH_LIB=src). */
export const measured = await loadBuild(
  'loopctl',
  fromSource ? 'src' : dir,
  fromSource ? 'src/ via tsx (esbuild keepNames)' : `tsc output (${path.relative(repoRoot, dir)})`,
);

const baselineDir = process.env['BENCH_BASELINE_DIR'] ? path.resolve(process.env['BENCH_BASELINE_DIR']) : undefined;
if (baselineDir !== undefined && !existsSync(path.join(baselineDir, 'index.js'))) {
  throw new Error(
    `BENCH_BASELINE_DIR=${baselineDir} holds no index.js: build it first (BENCHMARKS.md, "Machine and method")`,
  );
}
/**
 * BENCH_BASELINE_DIR: the comparison build (the pre-reshape engine), or undefined when not asked for. Its rows are
 * named BENCH_BASELINE_NAME (default `pre-reshape`), e.g. `before` for the build of a change's parent commit.
 */
export const baseline: Build | undefined =
  baselineDir === undefined
    ? undefined
    : await loadBuild(
        process.env['BENCH_BASELINE_NAME'] || 'pre-reshape',
        baselineDir,
        `baseline build (${baselineDir})`,
      );

/** The measured build, then the baseline when one is loaded. */
export const builds: readonly Build[] = baseline ? [measured, baseline] : [measured];

/** Another entry of the measured build by its path under src/ without extension (`'http/index'`, `'sqlite/index'`). */
export const loadEntry = measured.load;
/** `loopctl` (compiled, or src/ with BENCH_LIB=src). */
export const lib = measured.lib;
/** `loopctl/testing`. */
export const testing = measured.testing;
/** Which build is measured, for the tables (and the baseline when one is loaded). */
export const LIB_LABEL = baseline ? `${measured.label}; ${baseline.label}` : measured.label;
/** Where the baseline build lives (a profile tells its functions apart by this path), or undefined. */
export const BASELINE_DIR = baselineDir;
