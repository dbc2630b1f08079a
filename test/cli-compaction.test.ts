/**
 * Compaction through the CLI (docs/cli.md, "Long conversations and budgets"): the built bin with the offline model
 * and a small `--context-window`. A second run on a saved conversation compacts it (the offline model writes the
 * summary, so no key is needed), `--continue` resumes from the summary, the saved conversation keeps every original
 * Item, and `sessions show` prints them with the summary. `--no-compact` turns it off; `--max-cost` is refused for a
 * model without a price.
 */
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SUMMARY_PREFIX, applySummaries, type Item } from '../src/index.js';
import { SqliteSessionStore } from '../src/sqlite/index.js';
import { cliEnv, ensureBuilt, removeTempFolders, runBin, tempFolder } from './cli-helpers.js';

beforeAll(() => ensureBuilt(), 180_000);
afterAll(removeTempFolders);

const TASK = 'list the .md files';

/** The folder's one saved conversation, as the store gives it back. */
async function saved(env: NodeJS.ProcessEnv, cwd: string): Promise<readonly Item[]> {
  const list = await runBin(['sessions', 'list', '--json'], cwd, env).done;
  const { id } = JSON.parse(list.stdout.trim()) as { id: string };
  const store = new SqliteSessionStore(path.join(env['LOOPCTL_DATA_DIR']!, 'sessions.db'));
  try {
    return await store.session(id).load();
  } finally {
    await store.close();
  }
}

describe('compaction in the CLI, with the offline model', () => {
  it('--continue past the window compacts: the summary is saved after the originals and the next run resumes from it', async () => {
    const dir = tempFolder({ 'a.md': '# A\n', 'b.md': '# B\n' });
    const env = cliEnv({ LOOPCTL_DATA_DIR: tempFolder() });
    const first = await runBin(['--context-window', '500', TASK], dir, env).done;
    expect(first.code, first.stderr).toBe(0);
    expect(first.stderr).not.toContain('compacted');
    const before = await saved(env, dir);
    expect(before.map((i) => i.type)).toEqual(['user', 'assistant', 'tool_result', 'assistant']);

    const second = await runBin(['--context-window', '500', '--continue', '--json', TASK], dir, env).done;
    expect(second.code, second.stderr).toBe(0);
    // The first run's user message, its call and the call's result are covered; its answer is the turn kept.
    expect(second.stderr).toMatch(/\[loopctl\] compacted: 3 earlier messages summarised · about \d+ → \d+ tokens/);
    const events = second.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { type: string; [k: string]: unknown });
    const started = events.find((e) => e.type === 'compaction_started');
    const completed = events.find((e) => e.type === 'compaction_completed');
    expect(started).toMatchObject({ cause: 'threshold', strategy: 'summary', contextWindow: 500, items: 3 });
    expect(completed).toMatchObject({ strategy: 'summary', items: 3 });
    expect(events.at(-1)).toMatchObject({ type: 'run_completed', stopReason: 'completed' });

    const after = await saved(env, dir);
    expect(after.slice(0, before.length)).toEqual(before); // the originals stay, as they were appended
    const summary = after.find((i) => i.type === 'summary');
    const ids = before.flatMap((i) => (i.type === 'tool_result' ? [] : [i.id]));
    expect(summary).toMatchObject({ id: completed!['summaryId'], covers: ids.slice(0, 2) });
    expect(summary?.type === 'summary' && summary.text).toContain(`- the user: ${TASK}`);
    // What a next run sends: the summary first, in place of the three Items it covers.
    const sent = applySummaries(after);
    expect(sent[0]).toMatchObject({ type: 'user', text: expect.stringContaining(SUMMARY_PREFIX) });
    expect(sent).toHaveLength(after.length - 3); // the summary moves to where the Items it covers were

    const third = await runBin(['--context-window', '500', '--continue', TASK], dir, env).done;
    expect(third.code, third.stderr).toBe(0);
    expect(third.stdout).toContain('I found 2 .md files');

    const show = await runBin(['sessions', 'show'], dir, env).done;
    expect(show.code, show.stderr).toBe(0);
    expect(show.stdout.split(`> ${TASK}`)).toHaveLength(4); // every task is still readable
    expect(show.stdout).toContain('[summary of the earlier conversation] (offline model) What happened so far:');
  }, 120_000);

  it('--no-compact leaves the conversation as it is; --max-cost is refused for a model without a price', async () => {
    const dir = tempFolder({ 'a.md': '# A\n' });
    const env = cliEnv({ LOOPCTL_DATA_DIR: tempFolder() });
    expect((await runBin(['--context-window', '500', TASK], dir, env).done).code).toBe(0);
    const off = await runBin(['--context-window', '500', '--continue', '--no-compact', TASK], dir, env).done;
    expect(off.code, off.stderr).toBe(0);
    expect(off.stderr).not.toContain('compacted');
    expect((await saved(env, dir)).some((i) => i.type === 'summary')).toBe(false);

    const priced = await runBin(['--max-cost', '0.01', '--model', 'my-local-model', TASK], dir, env).done;
    expect(priced.code).toBe(2);
    expect(priced.stderr).toContain(
      'loopctl: option --max-cost: loopctl has no price for the model "my-local-model"; it knows loopctl-offline,',
    );
    const free = await runBin(['--max-cost', '0.01', '--max-total-tokens', '100000', TASK], dir, env).done;
    expect(free.code, free.stderr).toBe(0);
    expect(free.stderr).toMatch(/completed · .* · cost 0\b/);
  }, 120_000);
});
