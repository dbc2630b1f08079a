/**
 * The budget stop line of the CLI says where what the run did went (docs/cli.md, "Long conversations and
 * budgets"): "was saved" for a saved conversation (and `sessions list` then holds it), "was kept in memory, not
 * saved" with `--no-save` (and nothing is saved). The offline model and `--max-total-tokens 1`: the first request's
 * estimate is over the limit, so the run stops with a budget stop before it.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { cliEnv, removeTempFolders, runMain, tempFolder } from './support/cli-main.js';

afterAll(removeTempFolders);

const TASK = 'how many lines in a.md';

/** The `[loopctl] budget (…)` line of a run's stderr. */
const budgetLine = (stderr: string): string | undefined =>
  stderr.split('\n').find((line) => line.startsWith('[loopctl] budget ('));

describe('the budget stop line says whether what the run did was saved', () => {
  it('a saved conversation: "what it did was saved", and the conversation is listed', async () => {
    const dir = tempFolder({ 'a.md': 'one\ntwo\n' });
    const env = cliEnv();
    const run = await runMain(['--max-total-tokens', '1', '--cwd', dir, TASK], env);
    console.log(`saved: exit ${run.code}, ${budgetLine(run.stderr)}`);
    expect(run.code, run.stderr).toBe(0);
    expect(budgetLine(run.stderr)).toMatch(/; what it did was saved\) · /);
    const list = await runMain(['sessions', 'list', '--json', '--cwd', dir], env);
    expect(list.stdout.trim().split('\n')).toHaveLength(1);
  });

  it('--no-save: "what it did was kept in memory, not saved", and nothing is listed', async () => {
    const dir = tempFolder({ 'a.md': 'one\ntwo\n' });
    const env = cliEnv();
    const run = await runMain(['--no-save', '--max-total-tokens', '1', '--cwd', dir, TASK], env);
    console.log(`--no-save: exit ${run.code}, ${budgetLine(run.stderr)}`);
    expect(run.code, run.stderr).toBe(0);
    expect(budgetLine(run.stderr)).toMatch(/; what it did was kept in memory, not saved\) · /);
    expect(run.stderr).not.toContain('was saved');
    const list = await runMain(['sessions', 'list', '--json', '--cwd', dir], env);
    expect(list.stdout).toBe('');
  });
});
