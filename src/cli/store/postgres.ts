import type { PostgresSessionStore } from '../../postgres/index.js';
import { describeValue, isSessionSchemaError } from '../../index.js';
import { sanitizeLine } from '../sanitize.js';
import { UsageError } from '../usage-error.js';
import type { StoreLocation } from './location.js';
import { StoreError } from './store-error.js';

/** The `pg` version the project tests `--store postgres://…` with (an optional peer dependency). */
export const PG_PACKAGE = 'pg@8.23.1';

/** How long (ms) the CLI waits for a connection to the Postgres of `--store` before it gives up. */
export const CONNECT_TIMEOUT_MS = 5000;

/** The Postgres store of the CLI: `close()` also ends its pool (the CLI made it). */
export type CliPostgresStore = PostgresSessionStore;

/**
 * Opens the saved conversations in Postgres (`--store postgres://…` or `LOOPCTL_DATABASE_URL`): loads
 * `pg` and `loopctl/postgres` (only now), makes a pool of at most 2 connections (each connection waits
 * at most {@link CONNECT_TIMEOUT_MS}), and with `create` makes loopctl's tables in the schema when they
 * are missing (`createSchema`) or upgrades them when they are older (`migrate`), as the SQLite file is
 * created and migrated on open. Without `create`, resolves undefined when the schema has no loopctl
 * tables (a `sessions` command where nothing was saved).
 * @throws UsageError naming the install command when `pg` is not installed; {@link StoreError} (exit 1,
 *   one line) when the server cannot be reached or its tables cannot be used; `SessionSchemaError` for
 *   tables of a later loopctl or corrupt ones.
 */
export async function openPostgres(
  location: Extract<StoreLocation, { kind: 'postgres' }>,
  create: boolean,
): Promise<{ store: CliPostgresStore; where: string } | undefined> {
  let Pool: typeof import('pg').Pool;
  try {
    ({ Pool } = (await import('pg')).default);
  } catch (error) {
    const code = (error as { code?: unknown } | null)?.code;
    if (code !== 'ERR_MODULE_NOT_FOUND' && code !== 'MODULE_NOT_FOUND') throw error;
    throw new UsageError(
      `--store postgres://… needs pg, which is not installed; install it with: npm install ${PG_PACKAGE}`,
    );
  }
  const { PostgresSessionStore: Store, createSchema, migrate } = await import('../../postgres/index.js');
  const { readVersion } = await import('../../postgres/schema.js');
  const { schema } = location;
  const where = `${location.shown} (schema ${schema})`;
  const pool = new Pool({
    connectionString: location.url,
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    max: 2,
  });
  pool.on('error', () => undefined); // an idle connection that dies: the next query reports it
  try {
    if (!create && (await readVersion(pool, schema)) === undefined) {
      await pool.end();
      return undefined;
    }
    try {
      await createSchema(pool, { schema });
    } catch (error) {
      if (!(isSessionSchemaError(error) && error.problem === 'older')) throw error;
      await migrate(pool, { schema });
    }
  } catch (error) {
    await pool.end().catch(() => undefined);
    if (isSessionSchemaError(error)) throw error; // newer or corrupt: storeError words it
    const message = error instanceof Error ? error.message : describeValue(error);
    const code = (error as { code?: unknown } | null)?.code;
    const suffix = typeof code === 'string' && !message.includes(code) ? ` (${code})` : '';
    throw new StoreError(
      `the saved conversations in ${sanitizeLine(where)} cannot be used: ${sanitizeLine(message)}${suffix}`,
    );
  }
  const store = new Store(pool, { schema });
  const close = store.close.bind(store);
  let ended = false;
  store.close = async () => {
    await close();
    if (!ended) {
      ended = true;
      await pool.end();
    }
  };
  return { store, where };
}
