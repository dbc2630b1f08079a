/**
 * SqliteSessionStore on bad files and failing disks: a file that is not a database, a truncated one, one
 * written by a later loopctl, loopctl tables without a version — each a SessionSchemaError naming the problem,
 * the file left byte for byte as it was. A forward migration keeps the history. A read-only file and a full
 * disk make append reject with SessionStorageError (and a run end run_failed{session_error} with partial),
 * the earlier history intact and the run id not used up.
 */
import { existsSync, readFileSync, truncateSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { lastValueFrom, toArray } from 'rxjs';
import { afterAll, describe, expect, it } from 'vitest';
import { defineAgent, run, type Item, type RunFailed, type Session } from 'loopctl';
import { SqliteSessionStore, SQLITE_SCHEMA_VERSION } from 'loopctl/sqlite';
import { scriptedModel, sequentialIds } from 'loopctl/testing';
import { prepareSchema, SQLITE_MIGRATIONS } from '../src/sqlite/schema.js';
import { tempDirs } from './support/session-stores.js';

const dirs = tempDirs('loopctl-sqlite-faults-');
afterAll(() => dirs.removeAll());

const items = (tag: string, n: number): Item[] =>
  Array.from({ length: n }, (_, i) => ({ type: 'user', id: `${tag}-${i}`, text: `${tag} ${i} ${'.'.repeat(100)}` }));

/** A file holding session "s" with `n` items (run "r1"), closed. */
async function fileWithHistory(n = 3): Promise<string> {
  const file = path.join(dirs.make(), 'sessions.db');
  const store = new SqliteSessionStore(file);
  await store.session('s').append(items('a', n), { runId: 'r1' });
  await store.close();
  return file;
}

/** The error `open()` throws, or the one its first load rejects with; with the problem fields. */
async function openError(file: string): Promise<Record<string, unknown>> {
  try {
    const store = new SqliteSessionStore(file);
    try {
      await store.session('s').load();
    } finally {
      await store.close();
    }
  } catch (err) {
    const e = err as Record<string, unknown>;
    const fields = ['name', 'problem', 'expectedVersion', 'foundVersion', 'location'];
    return Object.fromEntries(fields.map((f) => [f, e[f]]));
  }
  throw new Error('the file opened and loaded');
}

describe('a file the store cannot use is a SessionSchemaError, and the file is left as it was', () => {
  it('a file that is not a database', async () => {
    const file = path.join(dirs.make(), 'notes.db');
    const text = 'these are my notes, not a database\n'.repeat(200);
    writeFileSync(file, text);
    expect(await openError(file)).toEqual({
      name: 'SessionSchemaError',
      problem: 'corrupt',
      expectedVersion: SQLITE_SCHEMA_VERSION,
      foundVersion: undefined,
      location: file,
    });
    expect(readFileSync(file, 'utf8')).toBe(text);
  });

  it('a file cut in half', async () => {
    const file = await fileWithHistory(3000);
    const size = readFileSync(file).length;
    truncateSync(file, Math.floor(size / 2));
    const before = readFileSync(file);
    expect(await openError(file)).toEqual({
      name: 'SessionSchemaError',
      problem: 'corrupt',
      expectedVersion: SQLITE_SCHEMA_VERSION,
      foundVersion: undefined,
      location: file,
    });
    expect(readFileSync(file).equals(before)).toBe(true);
  });

  it('a file written by a later loopctl (schema version 99)', async () => {
    const file = await fileWithHistory();
    const db = new Database(file);
    db.prepare('UPDATE loopctl_schema SET version = 99').run();
    db.close();
    const before = readFileSync(file);
    expect(await openError(file)).toEqual({
      name: 'SessionSchemaError',
      problem: 'newer',
      expectedVersion: SQLITE_SCHEMA_VERSION,
      foundVersion: 99,
      location: file,
    });
    expect(readFileSync(file).equals(before)).toBe(true);
    const raw = new Database(file, { readonly: true });
    expect(raw.prepare('SELECT count(*) FROM loopctl_items').pluck().get()).toBe(3);
    raw.close();
  });

  it('loopctl tables without loopctl_schema, or a version table that does not hold one number', async () => {
    const file = await fileWithHistory();
    const db = new Database(file);
    db.exec('DROP TABLE loopctl_schema');
    db.close();
    expect((await openError(file))['problem']).toBe('corrupt');
    const db2 = new Database(file);
    db2.exec("CREATE TABLE loopctl_schema (version); INSERT INTO loopctl_schema VALUES ('one'), (2)");
    db2.close();
    expect((await openError(file))['problem']).toBe('corrupt');
    expect(existsSync(file)).toBe(true);
  });

  it('a version table set back to 0 beside the tables is corrupt, not a file to migrate from scratch', async () => {
    const file = await fileWithHistory();
    const db = new Database(file);
    db.exec('UPDATE loopctl_schema SET version = 0');
    db.close();
    const before = readFileSync(file);
    const error = await openError(file);
    console.log(`version 0: ${JSON.stringify(error)}`);
    expect(error).toEqual({
      name: 'SessionSchemaError',
      problem: 'corrupt',
      expectedVersion: SQLITE_SCHEMA_VERSION,
      foundVersion: undefined,
      location: file,
    });
    expect(readFileSync(file).equals(before)).toBe(true);
  });
});

describe('schema versions', () => {
  it("a file with another program's tables gets loopctl's beside them, theirs untouched", async () => {
    const file = path.join(dirs.make(), 'app.db');
    const app = new Database(file);
    app.exec("CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES ('keep me')");
    app.close();
    const store = new SqliteSessionStore(file);
    await store.session('s').append(items('x', 1), { runId: 'r' });
    await store.close();
    const raw = new Database(file, { readonly: true });
    expect(raw.prepare('SELECT body FROM notes').pluck().all()).toEqual(['keep me']);
    expect(raw.prepare('SELECT version FROM loopctl_schema').pluck().all()).toEqual([SQLITE_SCHEMA_VERSION]);
    expect(raw.pragma('journal_mode', { simple: true })).toBe('wal');
    raw.close();
  });

  it('a version 1 file (before the run journal) is migrated on open: the journal table is added, the history kept', async () => {
    const file = path.join(dirs.make(), 'v1.db');
    const v1 = new Database(file);
    prepareSchema(v1, file, SQLITE_MIGRATIONS.slice(0, 1));
    v1.exec("INSERT INTO loopctl_sessions VALUES ('s', 1, 1, 1)");
    v1.prepare("INSERT INTO loopctl_items VALUES ('s', 0, ?)").run('{"type":"user","id":"old","text":"kept"}');
    v1.close();
    const store = new SqliteSessionStore(file);
    const session = store.session('s');
    expect(await session.load()).toEqual([{ type: 'user', id: 'old', text: 'kept' }]);
    await session.journalTurn('run', 1, items('j', 1));
    expect(await session.readJournal('run')).toEqual({ sealed: false, turns: [{ turn: 1, items: items('j', 1) }] });
    await store.close();
    const raw = new Database(file, { readonly: true });
    expect(raw.prepare('SELECT version FROM loopctl_schema').pluck().all()).toEqual([SQLITE_SCHEMA_VERSION]);
    raw.close();
  });

  it('a version 2 file (journals without claims) is migrated on open: its journal reads as it was, then claims fence it', async () => {
    const file = path.join(dirs.make(), 'v2.db');
    const v2 = new Database(file);
    prepareSchema(v2, file, SQLITE_MIGRATIONS.slice(0, 2));
    const old = JSON.stringify(items('old', 1));
    v2.prepare("INSERT INTO loopctl_journal VALUES ('s', 'run', 1, ?, 1)").run(old);
    v2.prepare("INSERT INTO loopctl_journal VALUES ('s', 'run', -2, ?, 2)").run(old);
    v2.close();
    const store = new SqliteSessionStore(file);
    const session = store.session('s');
    expect(await session.readJournal('run')).toEqual({
      sealed: false,
      turns: [{ turn: 1, items: items('old', 1) }],
      pending: { turn: 2, items: items('old', 1) },
    });
    expect(await session.journalledRuns()).toEqual(['run']);
    await session.journalTurn('run', 2, items('two', 1), { claim: 2 });
    const late = await session.journalTurn('run', 3, items('late', 1), { claim: 1 }).catch((e: Error) => e.name);
    expect(late).toBe('JournalFencedError');
    expect((await session.readJournal('run')).turns.map((t) => t.turn)).toEqual([1, 2]);
    await store.close();
    const raw = new Database(file, { readonly: true });
    expect(raw.prepare('SELECT version FROM loopctl_schema').pluck().all()).toEqual([SQLITE_SCHEMA_VERSION]);
    expect(raw.prepare('SELECT turn, claim FROM loopctl_journal ORDER BY turn').all()).toEqual([
      { turn: -2, claim: null },
      { turn: 0, claim: 2 },
      { turn: 1, claim: null },
      { turn: 2, claim: 2 },
    ]);
    raw.close();
  });

  it('a forward migration runs once and keeps the history; the older loopctl then refuses the file', async () => {
    const file = await fileWithHistory();
    const later = [...SQLITE_MIGRATIONS, 'ALTER TABLE loopctl_sessions ADD COLUMN title TEXT'];
    const db = new Database(file);
    prepareSchema(db, file, later);
    prepareSchema(db, file, later); // already there: nothing to run (the ALTER would fail twice)
    expect(db.prepare('SELECT version FROM loopctl_schema').pluck().get()).toBe(SQLITE_SCHEMA_VERSION + 1);
    expect(db.prepare('SELECT id, title FROM loopctl_sessions').all()).toEqual([{ id: 's', title: null }]);
    db.close();
    expect(await openError(file)).toMatchObject({ problem: 'newer', foundVersion: SQLITE_SCHEMA_VERSION + 1 });
  });
});

describe('a write that fails stores nothing: SessionStorageError, the history intact, the run id not used up', () => {
  it('a read-only file: load works, append rejects with SQLITE_READONLY', async () => {
    const file = await fileWithHistory();
    const db = new Database(file, { readonly: true });
    const store = new SqliteSessionStore(db);
    const s = store.session('s');
    const err = (await s.append(items('b', 2), { runId: 'r2' }).catch((e: unknown) => e)) as Record<string, unknown>;
    expect({ name: err['name'], code: err['code'], sessionId: err['sessionId'] }).toEqual({
      name: 'SessionStorageError',
      code: 'SQLITE_READONLY',
      sessionId: 's',
    });
    expect(await s.load()).toEqual(items('a', 3));
    await store.close();
    expect(db.open).toBe(true); // the caller's handle: the store does not close it
    db.close();
    const writable = new SqliteSessionStore(file);
    await writable.session('s').append(items('b', 2), { runId: 'r2' });
    expect(await writable.session('s').load()).toEqual([...items('a', 3), ...items('b', 2)]);
    await writable.close();
  });

  it('a read-only file without loopctl tables: they cannot be created, SessionStorageError SQLITE_READONLY', () => {
    const file = path.join(dirs.make(), 'empty.db');
    writeFileSync(file, '');
    const db = new Database(file, { readonly: true });
    let err: Record<string, unknown> = {};
    try {
      new SqliteSessionStore(db);
    } catch (e) {
      err = e as Record<string, unknown>;
    }
    expect({ name: err['name'], code: err['code'] }).toEqual({ name: 'SessionStorageError', code: 'SQLITE_READONLY' });
    expect(db.open).toBe(true);
    db.close();
    expect(readFileSync(file).length).toBe(0);
  });

  it('a full disk (the file may not grow): append rejects SQLITE_FULL; once there is room the run stores', async () => {
    const file = await fileWithHistory();
    const db = new Database(file);
    const store = new SqliteSessionStore(db);
    const s = store.session('s');
    const pages = db.pragma('page_count', { simple: true }) as number;
    db.pragma(`max_page_count = ${pages + 2}`);
    const big = items('big', 2000);
    const err = (await s.append(big, { runId: 'r2' }).catch((e: unknown) => e)) as Record<string, unknown>;
    expect({ name: err['name'], code: err['code'] }).toEqual({ name: 'SessionStorageError', code: 'SQLITE_FULL' });
    expect(await s.load()).toEqual(items('a', 3));
    db.pragma('max_page_count = 1073741823');
    await s.append(big, { runId: 'r2' });
    expect((await s.load()).length).toBe(2003);
    expect(await store.list()).toEqual([expect.objectContaining({ id: 's', items: 2003 })]);
    await store.close();
    db.close();
  });

  it('a run whose commit hits a read-only file ends session_error with partial, history intact', async () => {
    const file = await fileWithHistory();
    const db = new Database(file, { readonly: true });
    const store = new SqliteSessionStore(db);
    const agent = defineAgent({ name: 'a', instructions: '', model: scriptedModel(['the answer']) });
    // Without its lease (a lease is a write too: see the next spec), so the run reaches its commit.
    const readOnly = store.session('s');
    const session: Session = {
      load: () => readOnly.load(),
      append: (items, options) => readOnly.append(items, options),
    };
    const events = await lastValueFrom(
      run(agent, 'the question', { session, idGenerator: sequentialIds() }).pipe(toArray()),
    );
    const last = events.at(-1) as RunFailed;
    expect({ type: last.type, stopReason: last.stopReason, error: last.error.name, code: last.error['code'] }).toEqual({
      type: 'run_failed',
      stopReason: 'session_error',
      error: 'SessionStorageError',
      code: 'SQLITE_READONLY',
    });
    expect(last.partial.map((i) => [i.type, i.type === 'user' || i.type === 'assistant' ? i.text : ''])).toEqual([
      ['user', 'the question'],
      ['assistant', 'the answer'],
    ]);
    expect(await store.session('s').load()).toEqual(items('a', 3));
    await store.close();
    db.close();
  });

  it('a run on a read-only file fails at its start: no lease can be written (session_error)', async () => {
    const file = await fileWithHistory();
    const db = new Database(file, { readonly: true });
    const store = new SqliteSessionStore(db);
    const model = scriptedModel(['the answer']);
    const agent = defineAgent({ name: 'a', instructions: '', model });
    const events = await lastValueFrom(
      run(agent, 'the question', { session: store.session('s'), idGenerator: sequentialIds() }).pipe(toArray()),
    );
    expect(events.map((e) => e.type)).toEqual(['run_started', 'run_failed']);
    const last = events.at(-1) as RunFailed;
    expect({ stopReason: last.stopReason, error: last.error.name, code: last.error['code'] }).toEqual({
      stopReason: 'session_error',
      error: 'SessionStorageError',
      code: 'SQLITE_READONLY',
    });
    expect(last.partial).toEqual([{ type: 'user', id: 'item-1', text: 'the question' }]);
    expect(model.requests).toHaveLength(0);
    expect(await store.session('s').load()).toEqual(items('a', 3));
    await store.close();
    db.close();
  });

  it('a closed store rejects with code closed', async () => {
    const file = await fileWithHistory();
    const store = new SqliteSessionStore(file);
    await store.close();
    const err = (await store
      .session('s')
      .load()
      .catch((e: unknown) => e)) as Record<string, unknown>;
    expect({ name: err['name'], code: err['code'] }).toEqual({ name: 'SessionStorageError', code: 'closed' });
  });
});

describe('a path SQLite cannot open is a SessionStorageError naming the file', () => {
  it('a missing folder, or a folder where the file should be: SQLITE_CANTOPEN, nothing created', () => {
    const dir = dirs.make();
    const cases: [string, string][] = [
      [path.join(dir, 'no', 'such', 'sessions.db'), 'Cannot open database because the directory does not exist'],
      [dir, 'unable to open database file'],
    ];
    for (const [file, why] of cases) {
      let error: unknown;
      try {
        new SqliteSessionStore(file);
      } catch (e) {
        error = e;
      }
      console.log(`new SqliteSessionStore(${file}) threw ${String(error)}`);
      const e = error as Record<string, unknown>;
      expect({ name: e['name'], code: e['code'], sessionId: e['sessionId'], message: e['message'] }).toEqual({
        name: 'SessionStorageError',
        code: 'SQLITE_CANTOPEN',
        sessionId: undefined,
        message: `${file}: the database cannot be opened: ${why} (SQLITE_CANTOPEN)`,
      });
      expect((error as Error).cause).toBeInstanceOf(Error);
    }
    expect(existsSync(path.join(dir, 'no'))).toBe(false);
  });
});
