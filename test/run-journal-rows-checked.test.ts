/**
 * A store's journal rows are read strictly (docs/sessions.md, "The run journal"): a row that is not JSON, whose
 * Items are not an array of Items, or under a turn that is not an integer (turn 0 is the run's claim fence, never
 * read as a turn) makes `readJournal` reject with
 * `SessionSchemaError` (`corrupt`) naming the run and the turn, so `resumeRun` refuses with it and nothing runs;
 * `discardJournal` then removes the run from `journalledRuns()`. A stale response row (one a completed turn
 * superseded) is not a fault: it is ignored and the run continues.
 */
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { defineAgent, isSessionSchemaError, resumeRun, type Item } from 'loopctl';
import { SqliteSessionStore } from 'loopctl/sqlite';
import { scriptedModel } from 'loopctl/testing';
import { tempDirs } from './support/session-stores.js';

const dirs = tempDirs('loopctl-journal-rows-');
afterAll(() => dirs.removeAll());

const turn1: Item[] = [
  { type: 'user', id: 'u1', text: 'count files' },
  { type: 'assistant', id: 'a1', text: '', toolCalls: [{ callId: 'c1', name: 'ls', arguments: '{}' }] },
  { type: 'tool_result', callId: 'c1', output: '3 files', isError: false },
];

/** A store on a fresh file whose session "s1" journal holds `rows` for run "run-X", as a crash or a hand left them. */
function storeWith(rows: [turn: number, items: string][]): SqliteSessionStore {
  const file = path.join(dirs.make(), 'sessions.db');
  new SqliteSessionStore(file).close();
  const db = new Database(file);
  const put = db.prepare('INSERT INTO loopctl_journal (session_id, run_id, turn, items, stored_at) VALUES (?,?,?,?,?)');
  for (const [turn, items] of rows) put.run('s1', 'run-X', turn, items, 1);
  db.close();
  return new SqliteSessionStore(file);
}

async function refusal(rows: [number, string][]): Promise<unknown> {
  const store = storeWith(rows);
  const session = store.session('s1');
  const model = scriptedModel(['never asked']);
  const error = await resumeRun(defineAgent({ name: 'a', instructions: '', model }), 'run-X', { session }).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(model.calls).toHaveLength(0);
  await session.discardJournal('run-X');
  expect(await session.journalledRuns()).toEqual([]);
  await store.close();
  return error;
}

describe('journal rows are checked when read', () => {
  it.each([
    ['a row that is not JSON', [[1, 'not json{']], 'turn 1 of run "run-X" in session "s1" is not JSON'],
    [
      'Items that are an object',
      [[1, '{"not":"array"}']],
      'turn 1 of run "run-X" in session "s1" is not an array of Items, got',
    ],
    [
      'an entry that is not an Item',
      [[1, '[{"type":"bogus","id":"x"}]']],
      'turn 1 of run "run-X" in session "s1" is not an array of Items (item 0: type:',
    ],
    [
      'a row under a fractional turn beside a valid turn',
      [
        [1, JSON.stringify(turn1)],
        [1.5, JSON.stringify(turn1)],
      ],
      'turn 1.5 of run "run-X" in session "s1" is not a turn number',
    ],
  ] as [string, [number, string][], string][])(
    '%s: SessionSchemaError corrupt naming the run and the turn; nothing runs; a discard clears it',
    async (_, rows, message) => {
      const error = await refusal(rows);
      expect(isSessionSchemaError(error)).toBe(true);
      expect(error).toMatchObject({ problem: 'corrupt' });
      expect((error as Error).message).toContain(message);
    },
  );

  it('a stale response row (a turn a completed one superseded) is ignored: the run continues', async () => {
    const store = storeWith([
      [1, JSON.stringify(turn1)],
      [-1, JSON.stringify(turn1.slice(0, 2))],
    ]);
    const session = store.session('s1');
    expect(await session.readJournal('run-X')).toEqual({ sealed: false, turns: [{ turn: 1, items: turn1 }] });
    const model = scriptedModel(['There are 3 files.']);
    const handle = await resumeRun(defineAgent({ name: 'a', instructions: '', model }), 'run-X', { session });
    expect((await handle.result).output).toBe('There are 3 files.');
    expect((await session.load()).slice(0, 3)).toEqual(turn1);
    await store.close();
  });
});
