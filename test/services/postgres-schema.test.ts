/**
 * Postgres tables are never created implicitly: a store on a schema without them rejects with
 * SessionSchemaError (missing, naming the expected version) and creates nothing; createSchema is explicit and
 * idempotent; an older schema is refused until migrate(pool) upgrades it, keeping the history; a newer one is
 * refused by both. A failed write (a read-only transaction) rejects with SessionStorageError carrying the SQLSTATE.
 * A stored row that is not JSON, or JSON that is not an Item, makes load reject with SessionSchemaError (corrupt).
 */
import { describe, expect, it } from 'vitest';
import type { Item } from '../../src/index.js';
import { createSchema, migrate, POSTGRES_SCHEMA_VERSION, PostgresSessionStore } from '../../src/postgres/index.js';
import { migrateWith, POSTGRES_MIGRATIONS } from '../../src/postgres/schema.js';
import { postgresFixture } from './support/postgres.js';

const { pool, freshSchema } = postgresFixture();

const items = (tag: string, n: number): Item[] =>
  Array.from({ length: n }, (_, i) => ({ type: 'user', id: `${tag}-${i}`, text: `${tag} ${i}` }));

async function failure(promise: Promise<unknown>): Promise<Record<string, unknown>> {
  const err = (await promise.then(
    () => {
      throw new Error('expected a rejection');
    },
    (e: unknown) => e,
  )) as Record<string, unknown>;
  return {
    name: err['name'],
    problem: err['problem'],
    expectedVersion: err['expectedVersion'],
    foundVersion: err['foundVersion'],
    location: err['location'],
  };
}

const tables = async (schema: string): Promise<string[]> =>
  (
    await pool.query<{ t: string }>('SELECT tablename AS t FROM pg_tables WHERE schemaname = $1 ORDER BY 1', [schema])
  ).rows.map((r) => r.t);

describe('Postgres schema: explicit createSchema and migrate', () => {
  it('a schema without loopctl tables is refused: SessionSchemaError (missing); nothing is created', async () => {
    const schema = freshSchema();
    const store = new PostgresSessionStore(pool, { schema });
    const missing = {
      name: 'SessionSchemaError',
      problem: 'missing',
      expectedVersion: POSTGRES_SCHEMA_VERSION,
      foundVersion: undefined,
      location: `Postgres schema "${schema}"`,
    };
    expect(await failure(store.session('s').load())).toEqual(missing);
    expect(await failure(store.session('s').append(items('a', 1), { runId: 'r' }))).toEqual(missing);
    expect(await failure(store.list())).toEqual(missing);
    expect(await failure(migrate(pool, { schema }))).toEqual(missing);
    expect(await tables(schema)).toEqual([]);
    await createSchema(pool, { schema });
    await createSchema(pool, { schema }); // idempotent at the current version
    expect(await tables(schema)).toEqual([
      'loopctl_items',
      'loopctl_journal',
      'loopctl_leases',
      'loopctl_runs',
      'loopctl_schema',
      'loopctl_sessions',
    ]);
    await store.session('s').append(items('a', 2), { runId: 'r' }); // the same store works once the tables exist
    expect(await store.session('s').load()).toEqual(items('a', 2));
    expect(await migrate(pool, { schema })).toEqual({ from: POSTGRES_SCHEMA_VERSION, to: POSTGRES_SCHEMA_VERSION });
  });

  it('the items are read through the (session_id, seq) primary key index', async () => {
    const schema = freshSchema();
    await createSchema(pool, { schema });
    const index = await pool.query<{ def: string }>(
      "SELECT indexdef AS def FROM pg_indexes WHERE schemaname = $1 AND tablename = 'loopctl_items'",
      [schema],
    );
    expect(index.rows.map((r) => r.def.replace(/"?[a-z0-9_]+"?\.loopctl_items/, 'S.loopctl_items'))).toEqual([
      'CREATE UNIQUE INDEX loopctl_items_pkey ON S.loopctl_items USING btree (session_id, seq)',
    ]);
  });

  it('migrate runs the missing migrations once, keeping the history; a newer schema is refused by all', async () => {
    const schema = freshSchema();
    await createSchema(pool, { schema });
    const store = new PostgresSessionStore(pool, { schema });
    await store.session('s').append(items('a', 3), { runId: 'r1' });
    // A later loopctl with one more migration: this schema is older than it expects.
    const later = [...POSTGRES_MIGRATIONS, (s: string) => `ALTER TABLE ${s}.loopctl_sessions ADD COLUMN title text`];
    expect(await migrateWith(pool, { schema }, later)).toEqual({ from: POSTGRES_SCHEMA_VERSION, to: later.length });
    expect(await migrateWith(pool, { schema }, later)).toEqual({ from: later.length, to: later.length });
    // Now this loopctl is the older one: the store refuses the newer schema, and so do createSchema and migrate.
    const fresh = new PostgresSessionStore(pool, { schema });
    const newer = {
      name: 'SessionSchemaError',
      problem: 'newer',
      expectedVersion: POSTGRES_SCHEMA_VERSION,
      foundVersion: later.length,
      location: `Postgres schema "${schema}"`,
    };
    expect(await failure(fresh.session('s').load())).toEqual(newer);
    expect(await failure(createSchema(pool, { schema }))).toEqual(newer);
    expect(await failure(migrate(pool, { schema }))).toEqual(newer);
    const rows = await pool.query(`SELECT count(*)::int AS n FROM "${schema}".loopctl_items`);
    expect(rows.rows).toEqual([{ n: 3 }]);
  });

  it('a version 1 schema (before the run journal) is refused as older, then migrate adds the journal keeping the history', async () => {
    const schema = freshSchema();
    await pool.query(`CREATE SCHEMA "${schema}"`);
    await pool.query(POSTGRES_MIGRATIONS[0]!(`"${schema}"`));
    await pool.query(`UPDATE "${schema}".loopctl_schema SET version = 1`);
    await pool.query(`INSERT INTO "${schema}".loopctl_sessions VALUES ('s', 1, 1, 1)`);
    const old = '{"type":"user","id":"old","text":"kept"}';
    await pool.query(`INSERT INTO "${schema}".loopctl_items VALUES ('s', 0, $1)`, [old]);
    const store = new PostgresSessionStore(pool, { schema });
    expect(await failure(store.session('s').load())).toMatchObject({ problem: 'older', foundVersion: 1 });
    expect(await migrate(pool, { schema })).toEqual({ from: 1, to: POSTGRES_SCHEMA_VERSION });
    const session = new PostgresSessionStore(pool, { schema }).session('s');
    expect(await session.load()).toEqual([{ type: 'user', id: 'old', text: 'kept' }]);
    await session.journalTurn('run', 1, items('j', 1));
    expect(await session.readJournal('run')).toEqual({ sealed: false, turns: [{ turn: 1, items: items('j', 1) }] });
  });

  it('a version 2 schema (journals without claims) is migrated: its journal reads as it was, then claims fence it', async () => {
    const schema = freshSchema();
    await pool.query(`CREATE SCHEMA "${schema}"`);
    for (const m of POSTGRES_MIGRATIONS.slice(0, 2)) await pool.query(m(`"${schema}"`));
    await pool.query(`UPDATE "${schema}".loopctl_schema SET version = 2`);
    const old = JSON.stringify(items('old', 1));
    await pool.query(`INSERT INTO "${schema}".loopctl_journal VALUES ('s', 'run', 1, $1, 1), ('s', 'run', -2, $1, 2)`, [
      old,
    ]);
    expect(await migrate(pool, { schema })).toEqual({ from: 2, to: POSTGRES_SCHEMA_VERSION });
    const session = new PostgresSessionStore(pool, { schema }).session('s');
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
    const rows = await pool.query(`SELECT turn, claim FROM "${schema}".loopctl_journal ORDER BY turn`);
    expect(rows.rows).toEqual([
      { turn: -2, claim: null },
      { turn: 0, claim: 2 },
      { turn: 1, claim: null },
      { turn: 2, claim: 2 },
    ]);
  });

  it('a store whose version row was set back is refused as older (it reads the database, not a cache)', async () => {
    const schema = freshSchema();
    await createSchema(pool, { schema });
    await pool.query(`UPDATE "${schema}".loopctl_schema SET version = 0`);
    const store = new PostgresSessionStore(pool, { schema });
    expect(await failure(store.list())).toEqual({
      name: 'SessionSchemaError',
      problem: 'older',
      expectedVersion: POSTGRES_SCHEMA_VERSION,
      foundVersion: 0,
      location: `Postgres schema "${schema}"`,
    });
  });

  it('a write the server refuses rejects with SessionStorageError and the SQLSTATE; nothing is stored', async () => {
    const schema = freshSchema();
    await createSchema(pool, { schema });
    const store = new PostgresSessionStore(pool, { schema });
    await store.session('s').append(items('a', 1), { runId: 'r1' });
    await store.session('s').load(); // the version check is done: the next failure is the write's own
    await pool.query(`ALTER TABLE "${schema}".loopctl_items ADD CONSTRAINT short CHECK (length(item) < 100)`);
    const err = (await store
      .session('s')
      .append(items('b'.repeat(200), 2), { runId: 'r2' })
      .catch((e) => e)) as Record<string, unknown>;
    expect({ name: err['name'], code: err['code'], sessionId: err['sessionId'] }).toEqual({
      name: 'SessionStorageError',
      code: '23514',
      sessionId: 's',
    });
    expect(await store.session('s').load()).toEqual(items('a', 1));
    expect((await store.list()).map((i) => [i.id, i.items])).toEqual([['s', 1]]);
  });

  it('a stored row that is not JSON or not an Item: load rejects with SessionSchemaError (corrupt) naming the row', async () => {
    const schema = freshSchema();
    await createSchema(pool, { schema });
    const store = new PostgresSessionStore(pool, { schema });
    await store.session('s').append(items('a', 3), { runId: 'r1' });
    const rows: [string, string][] = [
      ['null', 'item 1 of session "s" is not an Item (Invalid input: expected object, received null)'],
      [
        '{"type":"assistant","id":"a1","text":"hi"}',
        'item 1 of session "s" is not an Item (toolCalls: Invalid input: expected array, received undefined)',
      ],
      ['{not json', 'item 1 of session "s" is not JSON'],
    ];
    for (const [row, what] of rows) {
      await pool.query(`UPDATE "${schema}".loopctl_items SET item = $1 WHERE seq = 1`, [row]);
      const err = (await store
        .session('s')
        .load()
        .catch((e: unknown) => e)) as Record<string, unknown>;
      console.log(`row ${row}: load() rejected with ${String(err)}`);
      expect({ name: err['name'], problem: err['problem'], message: err['message'] }).toEqual({
        name: 'SessionSchemaError',
        problem: 'corrupt',
        message: `Postgres schema "${schema}": ${what}`,
      });
    }
  });

  it('a bad schema name is a ConfigurationError naming options.schema', () => {
    const field = (f: () => unknown) => {
      try {
        f();
      } catch (e) {
        return (e as { field?: string }).field;
      }
      return 'accepted';
    };
    expect(field(() => new PostgresSessionStore(pool, { schema: '' }))).toBe('options.schema');
    expect(field(() => new PostgresSessionStore(pool, { schema: 'x'.repeat(64) }))).toBe('options.schema');
  });
});
