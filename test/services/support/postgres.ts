/**
 * Postgres for the services tier: a pool on the libpq variables (defaults PGHOST=127.0.0.1 PGPORT=5432
 * PGUSER=postgres PGDATABASE=test; PGPASSWORD when set), and a new schema per store, dropped after each test.
 * Peers inherit the same variables.
 */
import pg from 'pg';
import { afterAll, afterEach, beforeAll } from 'vitest';
import type { TamperHooks } from '../../../src/node/testing/index.js';
import { createSchema, PostgresSessionStore } from '../../../src/postgres/index.js';

process.env['PGHOST'] ??= '127.0.0.1';
process.env['PGPORT'] ??= '5432';
process.env['PGUSER'] ??= 'postgres';
process.env['PGDATABASE'] ??= 'test';

const START = 'pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start';
let counter = 0;

/**
 * Registers the file's hooks and returns its pool and store factory: `beforeAll` fails the file with one line
 * when Postgres does not answer (never a skip), `afterEach` drops the schemas the test made.
 */
export function postgresFixture(): {
  pool: pg.Pool;
  freshSchema: () => string;
  makeStore: () => Promise<PostgresSessionStore>;
  tamper: TamperHooks;
} {
  const pool = new pg.Pool({ max: 8 });
  const made: string[] = [];
  beforeAll(async () => {
    await pool.query('SELECT 1').catch((err: Error) => {
      const env = process.env;
      const at = `${env['PGUSER']}@${env['PGHOST']}:${env['PGPORT']}/${env['PGDATABASE']}`;
      throw new Error(`Postgres ${at} does not answer: ${err.message} (start it with: ${START})`);
    });
  });
  afterEach(async () => {
    for (const schema of made.splice(0)) await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  });
  afterAll(() => pool.end());
  const freshSchema = (): string => {
    const schema = `loopctl_test_${process.pid}_${counter++}`;
    made.push(schema);
    return schema;
  };
  const makeStore = async (): Promise<PostgresSessionStore> => {
    const schema = freshSchema();
    await createSchema(pool, { schema });
    return new PostgresSessionStore(pool, { schema });
  };
  // The contract's tamper hooks: a history row deleted, a stored count set, behind the store's back.
  const schemaOf = (store: unknown): string => `"${(store as PostgresSessionStore).schema}"`;
  const tamper: TamperHooks = {
    removeItem: (store, id, index) =>
      pool.query(`DELETE FROM ${schemaOf(store)}.loopctl_items WHERE session_id = $1 AND seq = $2`, [id, index]),
    setCount: (store, id, count) =>
      pool.query(`UPDATE ${schemaOf(store)}.loopctl_sessions SET items = $2 WHERE id = $1`, [id, count]),
  };
  return { pool, freshSchema, makeStore, tamper };
}
