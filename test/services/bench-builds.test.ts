/**
 * `npm run bench` builds what it measures before it measures anything (bench/lib/loopctl.ts, `emitArgs`): this
 * checkout's library, and for `compare <ref>` another commit's (bench/lib/compare.ts). A build option the
 * package's tsconfig.build.json gains (its `inlineSources` once made every `npm run bench` stop at tsc's
 * TS5051, unseen while the figures were taken with BENCH_LIB_DIR=dist) must not stop them: the smallest bench
 * (`turn`, one round) runs through `npm run bench` end to end, and the compare build of HEAD compiles.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { buildOther } from '../../bench/lib/compare.js';
import { repoRoot } from '../support/openai-server.js';

const run = promisify(execFile);

describe('the benchmarks build what they measure', () => {
  it('npm run bench -- turn (one round): builds the library, prints its table, exit 0', async () => {
    const env = { ...process.env, BENCH_ROUNDS: '1' };
    const { stdout } = await run('npm', ['run', 'bench', '--', 'turn'], { cwd: repoRoot, env, timeout: 240_000 });
    const rows = stdout.split('\n').filter((line) => /^instant model \+ zod tool +loopctl +\d+ +1 /.test(line));
    console.log(`turn bench rows:\n${rows.join('\n')}`);
    expect(rows).toHaveLength(3);
    expect(stdout).toMatch(/\(turn: [\d.]+ s, exit 0\)/);
  }, 300_000);

  it("compare's build of another commit (HEAD here) compiles its library and removes its worktree", () => {
    const other = buildOther('HEAD');
    try {
      expect(existsSync(path.join(other.dir, 'index.js'))).toBe(true);
      expect(existsSync(path.join(other.dir, 'testing', 'index.js'))).toBe(true);
    } finally {
      other.remove();
    }
    expect(existsSync(other.dir)).toBe(false);
  }, 300_000);
});
