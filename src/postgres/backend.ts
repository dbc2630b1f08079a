import type { Pool, PoolClient, QueryResultRow } from 'pg';
import type { Sql } from './sql.js';

/**
 * Internal to the package (not exported from `loopctl/postgres`): what a `PostgresSession` needs of
 * the store that made it. `PostgresSessionStore` provides it; the session depends on this shape only,
 * so the two files do not import each other.
 * - `query`: one statement on the pool after the schema check, driver errors typed
 *   (`SessionSchemaError`, `SessionStorageError`);
 * - `ready`: resolves once the schema is at `POSTGRES_SCHEMA_VERSION`;
 * - `refuse`: after `take` found a live lease on `id`, takes it over when its holder is a process on this host
 *   that no longer exists, else rejects with `ConcurrentRunError` naming the run and process holding it;
 * - `typed`: a driver error as the typed error `query` would give.
 */
export interface PostgresBackend {
  readonly pool: Pool;
  readonly schema: string;
  readonly sql: Sql;
  query<R extends QueryResultRow>(sessionId: string | undefined, text: string, params: unknown[]): Promise<R[]>;
  ready(sessionId: string | undefined): Promise<void>;
  refuse(client: Pool | PoolClient, id: string, runId: string, token: string, ms: number): Promise<void>;
  typed(sessionId: string | undefined, err: unknown): unknown;
}
