/**
 * `npm run bench` builds what it measures before it measures anything (bench/lib/loopctl.ts, `emitArgs`: the same
 * arguments build another commit for `compare <ref>`, bench/lib/compare.ts, which needs the git history CI's copy
 * of the repository does not have). A build option the package's tsconfig.build.json gains (its `inlineSources`
 * once made every `npm run bench` stop at tsc's TS5051, unseen while the figures were taken with
 * BENCH_LIB_DIR=dist) must not stop it: the smallest bench (`turn`, one round) runs through `npm run bench` end to
 * end.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
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
});
