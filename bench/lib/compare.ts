/**
 * `npm run bench -- compare <ref>`: the regression guard. Builds another commit of this repository (any git ref:
 * `main`, `HEAD~3`, a hash) in a temporary git worktree, with this checkout's `node_modules` linked in (both builds
 * share `rxjs`, `openai` and `zod`, so only loopctl's own code differs), compiled the way the benchmarks compile
 * the measured build (bench/lib/loopctl.ts). The benchmarks then load it next to the measured build, in the same
 * process (`BENCH_BASELINE_DIR`, rows named after the ref), and measure both in the same interleaved rounds.
 * The worktree is removed afterwards, also when a benchmark fails.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { emitArgs, repoRoot } from './loopctl.js';

/** The benchmarks `compare` runs against the other build: each prints the baseline's rows and a ratio. */
export const COMPARED = ['stream', 'memory', 'cancel'] as const;

/** A compiled build of another commit; `remove()` deletes its worktree. */
export interface OtherBuild {
  /** The commit, abbreviated (the row name of the baseline in the tables). */
  readonly name: string;
  /** Its compiled `src/` (what `BENCH_BASELINE_DIR` points at). */
  readonly dir: string;
  remove(): void;
}

const git = (args: string[]): string =>
  execFileSync('git', args, { cwd: repoRoot, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim();

/**
 * Checks out `ref` into a temporary worktree and compiles its `src/` with this checkout's TypeScript.
 *
 * @throws {Error} when `ref` names no commit of this repository (git's own message), or its sources do not compile.
 */
export function buildOther(ref: string): OtherBuild {
  const commit = git(['rev-parse', '--verify', '--quiet', `${ref}^{commit}`]);
  const name = git(['rev-parse', '--short', commit]);
  const tmp = mkdtempSync(path.join(tmpdir(), 'loopctl-compare-'));
  const tree = path.join(tmp, 'tree');
  const remove = (): void => {
    try {
      git(['worktree', 'remove', '--force', tree]);
    } catch {
      // never added, or already gone
    }
    rmSync(tmp, { recursive: true, force: true });
  };
  try {
    git(['worktree', 'add', '--detach', tree, commit]);
    symlinkSync(path.join(repoRoot, 'node_modules'), path.join(tree, 'node_modules'), 'dir');
    // Inside the worktree: its package.json makes the output ES modules, and its node_modules link resolves them.
    const dir = path.join(tree, 'dist');
    execFileSync(process.execPath, emitArgs(tree, dir), { cwd: tree, stdio: 'inherit' });
    return { name, dir, remove };
  } catch (error) {
    remove();
    throw error;
  }
}
