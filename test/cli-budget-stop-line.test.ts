/**
 * The budget stop line of the built bin says where what the run did went (docs/cli.md, "Long conversations and
 * budgets"): "was saved" for a saved conversation (and `sessions list` then holds it), "was kept in memory, not
 * saved" with `--no-save` (and nothing is saved). The offline model and `--max-total-tokens 1`: the first request's
 * estimate is over the limit, so the run stops with a budget stop before it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliEnv, ensureBuilt, removeTempFolders, runBin, tempFolder } from './cli-helpers.js';

beforeAll(() => ensureBuilt(), 180_000);
afterAll(removeTempFolders);

const TASK = 'how many lines in a.md';

/** The `[loopctl] budget (…)` line of a run's stderr. */
const budgetLine = (stderr: string): string | undefined =>
  stderr.split('\n').find((line) => line.startsWith('[loopctl] budget ('));

describe('the budget stop line says whether what the run did was saved', () => {
  it('a saved conversation: "what it did was saved", and the conversation is listed', async () => {
    const dir = tempFolder({ 'a.md': 'one\ntwo\n' });
    const env = cliEnv();
    const run = await runBin(['--max-total-tokens', '1', TASK], dir, env).done;
    console.log(`saved: exit ${run.code}, ${budgetLine(run.stderr)}`);
    expect(run.code, run.stderr).toBe(0);
    expect(budgetLine(run.stderr)).toMatch(/; what it did was saved\) · /);
    const list = await runBin(['sessions', 'list', '--json'], dir, env).done;
    expect(list.stdout.trim().split('\n')).toHaveLength(1);
  }, 60_000);

  it('--no-save: "what it did was kept in memory, not saved", and nothing is listed', async () => {
    const dir = tempFolder({ 'a.md': 'one\ntwo\n' });
    const env = cliEnv();
    const run = await runBin(['--no-save', '--max-total-tokens', '1', TASK], dir, env).done;
    console.log(`--no-save: exit ${run.code}, ${budgetLine(run.stderr)}`);
    expect(run.code, run.stderr).toBe(0);
    expect(budgetLine(run.stderr)).toMatch(/; what it did was kept in memory, not saved\) · /);
    expect(run.stderr).not.toContain('was saved');
    const list = await runBin(['sessions', 'list', '--json'], dir, env).done;
    expect(list.stdout).toBe('');
  }, 60_000);
});
