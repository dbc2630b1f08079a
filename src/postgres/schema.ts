/**
 * The Postgres schema of session stores: created only by an explicit `createSchema`, upgraded only by
 * an explicit `migrate` ("tables are never created implicitly"). The version lives in
 * `<schema>.loopctl_schema`; `POSTGRES_MIGRATIONS[v]` upgrades version v to v + 1.
 */
import type { Pool, PoolClient } from 'pg';
import { ConfigurationError } from '../errors.js';
import { SessionSchemaError } from '../session/errors.js';

/** Options of {@link createSchema} and {@link migrate}: `schema`, the Postgres schema (default `loopctl`). */
export interface PostgresSchemaOptions {
  readonly schema?: string;
}

/** Each entry upgrades the schema by one version (index 0 creates version 1); `S` is the quoted schema. */
export const POSTGRES_MIGRATIONS: readonly ((s: string) => string)[] = [
  (s) => `
    CREATE TABLE ${s}.loopctl_schema (version integer NOT NULL);
    INSERT INTO ${s}.loopctl_schema (version) VALUES (0);
    CREATE TABLE ${s}.loopctl_sessions (
      id text PRIMARY KEY, items integer NOT NULL, created_at bigint NOT NULL, updated_at bigint NOT NULL
    );
    CREATE INDEX loopctl_sessions_by_update ON ${s}.loopctl_sessions (updated_at DESC, id COLLATE "C");
    -- The primary key is the index a load by session id reads, in seq order.
    CREATE TABLE ${s}.loopctl_items (
      session_id text NOT NULL, seq integer NOT NULL, item text NOT NULL, PRIMARY KEY (session_id, seq)
    );
    CREATE TABLE ${s}.loopctl_runs (
      session_id text NOT NULL, run_id text NOT NULL, stored_at bigint NOT NULL, PRIMARY KEY (session_id, run_id)
    );
    CREATE TABLE ${s}.loopctl_leases (
      session_id text PRIMARY KEY, run_id text NOT NULL, token text NOT NULL, expires_at bigint NOT NULL
    );`,
  // Version 2: the run journal (docs/sessions.md, "The run journal"): one row per completed turn of a run not
  // committed yet, its Items as one JSON array (text, as the Items are); a row under turn -n holds turn n's model
  // response, journalled before its tools ran (`journalResponse`). Additive: migrate keeps every row.
  (s) => `
    CREATE TABLE ${s}.loopctl_journal (
      session_id text NOT NULL, run_id text NOT NULL, turn integer NOT NULL, items text NOT NULL,
      stored_at bigint NOT NULL, PRIMARY KEY (session_id, run_id, turn)
    );`,
  // Version 3: journals fenced per claim (docs/sessions.md, "Claims"): each row keeps the claim that wrote it
  // (NULL: a write without a claim, or a row from version 2), and a run's row under turn 0 (no Items) holds its
  // fence, the lowest claim whose writes are still accepted. Additive: version 2 journals stay readable.
  (s) => `ALTER TABLE ${s}.loopctl_journal ADD COLUMN claim integer;`,
];

/** The schema version this loopctl reads and writes. */
export const POSTGRES_SCHEMA_VERSION = POSTGRES_MIGRATIONS.length;

/** The schema name of `options`, checked; `loopctl` when absent. */
export function schemaName(options: PostgresSchemaOptions | undefined): string {
  const schema = options?.schema ?? 'loopctl';
  if (typeof schema !== 'string' || schema.length === 0 || Buffer.byteLength(schema) > 63) {
    throw new ConfigurationError('options.schema', `must be a Postgres name of 1 to 63 bytes (got ${String(schema)})`);
  }
  return schema;
}

/** `name` as a quoted SQL identifier. */
export const quoteIdent = (name: string): string => `"${name.replace(/"/g, '""')}"`;

/** The stored version, or undefined when the schema or its version table does not exist. */
export async function readVersion(client: Pool | PoolClient, schema: string): Promise<number | undefined> {
  const exists = await client.query<{ t: string | null }>('SELECT to_regclass($1) AS t', [
    `${quoteIdent(schema)}.loopctl_schema`,
  ]);
  if (exists.rows[0]?.t == null) return undefined;
  const text = `SELECT version FROM ${quoteIdent(schema)}.loopctl_schema`;
  const rows = (await client.query<{ version: number }>(text)).rows;
  const version = rows[0]?.version;
  if (rows.length !== 1 || typeof version !== 'number') {
    const init = { problem: 'corrupt' as const, expectedVersion: POSTGRES_SCHEMA_VERSION, location: where(schema) };
    throw new SessionSchemaError(init, `loopctl_schema holds ${rows.length} rows, not one version number`);
  }
  return version;
}

/** `SessionSchemaError` unless `found` is the version this loopctl uses. */
export function checkVersion(schema: string, found: number | undefined, expected = POSTGRES_SCHEMA_VERSION): void {
  if (found === expected) return;
  const location = where(schema);
  if (found === undefined) {
    const init = { problem: 'missing' as const, expectedVersion: expected, location };
    const message = `no loopctl tables (schema version ${expected} expected): run createSchema(pool)`;
    throw new SessionSchemaError(init, message);
  }
  const problem = found < expected ? ('older' as const) : ('newer' as const);
  const fix = found < expected ? 'run migrate(pool)' : 'use the later loopctl that wrote it';
  throw new SessionSchemaError(
    { problem, expectedVersion: expected, foundVersion: found, location },
    `schema version ${found} found, version ${expected} expected: ${fix}`,
  );
}

/** How messages name a schema. */
export const where = (schema: string): string => `Postgres schema "${schema}"`;

/**
 * Creates the schema (when missing) and loopctl's tables at {@link POSTGRES_SCHEMA_VERSION}, in one
 * transaction. Does nothing when they exist at that version; rejects with `SessionSchemaError`
 * (`older`: run `migrate`; `newer`) when they exist at another, changing nothing.
 */
export async function createSchema(pool: Pool, options?: PostgresSchemaOptions): Promise<void> {
  const schema = schemaName(options);
  await inTransaction(pool, schema, async (client, found) => {
    if (found !== undefined) return checkVersion(schema, found);
    await client.query(`CREATE SCHEMA IF NOT EXISTS ${quoteIdent(schema)}`);
    await upgrade(client, schema, 0, POSTGRES_MIGRATIONS);
  });
}

/**
 * Upgrades loopctl's tables to {@link POSTGRES_SCHEMA_VERSION} by running the missing forward
 * migrations in one transaction; resolves with the versions before and after. Rejects with
 * `SessionSchemaError` (`missing`: run `createSchema`; `newer`), changing nothing.
 */
export function migrate(pool: Pool, options?: PostgresSchemaOptions): Promise<{ from: number; to: number }> {
  return migrateWith(pool, options, POSTGRES_MIGRATIONS);
}

/** {@link migrate} with another list of migrations (a test's, to prove an upgrade path). */
export async function migrateWith(
  pool: Pool,
  options: PostgresSchemaOptions | undefined,
  migrations: readonly ((s: string) => string)[],
): Promise<{ from: number; to: number }> {
  const schema = schemaName(options);
  return inTransaction(pool, schema, async (client, found) => {
    if (found === undefined || found > migrations.length) checkVersion(schema, found, migrations.length);
    await upgrade(client, schema, found!, migrations);
    return { from: found!, to: migrations.length };
  });
}

async function upgrade(
  client: PoolClient,
  schema: string,
  from: number,
  migrations: readonly ((s: string) => string)[],
): Promise<void> {
  if (from === migrations.length) return;
  for (let v = from; v < migrations.length; v++) await client.query(migrations[v]!(quoteIdent(schema)));
  await client.query(`UPDATE ${quoteIdent(schema)}.loopctl_schema SET version = $1`, [migrations.length]);
}

/** `body` in a transaction holding an advisory lock on `schema` (two migrations never interleave). */
async function inTransaction<T>(
  pool: Pool,
  schema: string,
  body: (client: PoolClient, found: number | undefined) => Promise<T>,
): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    await client.query("SELECT pg_advisory_xact_lock(hashtextextended('loopctl schema ' || $1, 0))", [schema]);
    const result = await body(client, await readVersion(client, schema));
    await client.query('COMMIT');
    return result;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    client.release();
  }
}
