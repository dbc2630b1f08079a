/**
 * A stored history row is read strictly, like a journal row: `load()` of a SQLite session rejects with
 * `SessionSchemaError` (`corrupt`) naming the file, the session and the row for a row that is JSON but not an Item
 * (`null`, an unknown type, an assistant without `toolCalls`), as it does for a row that is not JSON; the file is
 * left as it is. `loopctl sessions show` then prints that error as its one `loopctl:` line (exit 1), never a
 * JavaScript message about reading a property of null.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { isSessionSchemaError, type Item } from 'loopctl';
import { SqliteSessionStore } from 'loopctl/sqlite';
import { main } from '../src/cli/app.js';
import { folderKey } from '../src/cli/store/names.js';
import { tempDirs } from './support/session-stores.js';

const dirs = tempDirs('loopctl-load-rows-');
afterAll(() => dirs.removeAll());

const history: Item[] = [
  { type: 'user', id: 'u1', text: 'how many lines in a.md' },
  { type: 'assistant', id: 'a1', text: 'a.md has 2 lines.', toolCalls: [] },
];

/** A file holding `id`'s history with its row 1 replaced by `row`, closed. */
async function fileWithRow(id: string, row: string, dir = dirs.make()): Promise<string> {
  const file = path.join(dir, 'sessions.db');
  const store = new SqliteSessionStore(file);
  await store.session(id).append(history, { runId: 'r1' });
  await store.close();
  const db = new Database(file);
  db.prepare('UPDATE loopctl_items SET item = ? WHERE session_id = ? AND seq = 1').run(row, id);
  db.close();
  return file;
}

const ROWS: [string, string, string][] = [
  ['null', 'null', 'item 1 of session "s" is not an Item (Invalid input: expected object, received null)'],
  [
    'an unknown type',
    '{"type":"bogus","id":"x"}',
    'item 1 of session "s" is not an Item (type: Invalid discriminator value. ' +
      "Expected 'user' | 'assistant' | 'tool_result' | 'summary')",
  ],
  [
    'an assistant without toolCalls',
    '{"type":"assistant","id":"a1","text":"hi"}',
    'item 1 of session "s" is not an Item (toolCalls: Invalid input: expected array, received undefined)',
  ],
  ['a row that is not JSON', '{not json', 'item 1 of session "s" is not JSON'],
];

describe('SQLite load() checks each stored row', () => {
  for (const [name, row, what] of ROWS) {
    it(`${name}: SessionSchemaError (corrupt) naming the file and the row; the file left as it is`, async () => {
      const file = await fileWithRow('s', row);
      const before = readFileSync(file);
      const store = new SqliteSessionStore(file);
      const error = await store
        .session('s')
        .load()
        .then(
          () => undefined,
          (e: unknown) => e,
        );
      await store.close();
      console.log(`${name}: load() rejected with ${String(error)}`);
      expect(isSessionSchemaError(error)).toBe(true);
      expect(error).toMatchObject({ problem: 'corrupt', location: file });
      expect((error as Error).message).toBe(`${file}: ${what}; the file is left as it is`);
      expect(readFileSync(file).equals(before)).toBe(true);
    });
  }
});

describe('loopctl sessions show on a tampered row', () => {
  it('prints one loopctl: line naming the file and the row (exit 1), nothing on stdout', async () => {
    const project = dirs.make();
    const data = dirs.make();
    const id = `${folderKey(project)}#work`;
    const file = await fileWithRow(id, 'null', data);
    const out = { text: '', isTTY: false, write: (t: string) => void (out.text += t) };
    const err = { text: '', isTTY: false, write: (t: string) => void (err.text += t) };
    const exit = (c: number): never => {
      throw new Error(`exit ${c}`);
    };
    const code = await main(
      ['sessions', 'show', 'work', '--cwd', project],
      { LOOPCTL_DATA_DIR: data },
      {
        stdout: out,
        stderr: err,
        exit,
      },
    );
    console.log(`sessions show exited ${code} with: ${err.text.trim()}`);
    expect(code).toBe(1);
    expect(out.text).toBe('');
    const problems = err.text.split('\n').filter((line) => line.startsWith('loopctl:'));
    expect(problems).toEqual([
      `loopctl: ${file}: item 1 of session ${JSON.stringify(id)} is not an Item (Invalid input: expected object, ` +
        'received null); the file is left as it is; move the file away to start afresh, or run with --no-save',
    ]);
  });
});

describe('loopctl --continue on a history with a row removed', () => {
  it('refuses before any run with one loopctl: line naming the missing row (exit 1); the header never shows its count', async () => {
    const project = dirs.make();
    const data = dirs.make();
    const id = `${folderKey(project)}#work`;
    const file = path.join(data, 'sessions.db');
    const store = new SqliteSessionStore(file);
    await store.session(id).append([...history, { type: 'user', id: 'u2', text: 'and b.md' }], { runId: 'r1' });
    await store.close();
    const db = new Database(file);
    db.prepare('DELETE FROM loopctl_items WHERE session_id = ? AND seq = 1').run(id);
    db.close();
    const out = { text: '', isTTY: false, write: (t: string) => void (out.text += t) };
    const err = { text: '', isTTY: false, write: (t: string) => void (err.text += t) };
    const exit = (c: number): never => {
      throw new Error(`exit ${c}`);
    };
    const code = await main(
      ['--continue', 'how many lines in a.md', '--cwd', project],
      { LOOPCTL_DATA_DIR: data },
      { stdout: out, stderr: err, exit },
    );
    console.log(`--continue exited ${code} with: ${err.text.trim()}`);
    expect(code).toBe(1);
    expect(out.text).toBe('');
    expect(err.text).not.toContain('continued: 3 items');
    expect(err.text.split('\n').filter((line) => line.startsWith('loopctl:'))).toEqual([
      `loopctl: ${file}: item 1 of session ${JSON.stringify(id)} is missing (the next stored row is item 2): ` +
        'a row was removed; the file is left as it is; move the file away to start afresh, or run with --no-save',
    ]);
  });
});
