import type { Statements } from './statements.js';

/**
 * Internal to the package (not exported from `loopctl/sqlite`): what a `SqliteSession` needs of the
 * store that made it. `SqliteSessionStore` provides it; the session depends on this shape only, so
 * the two files do not import each other.
 * - `location`: the file, for error messages;
 * - `run`: `body` with the prepared statements, driver errors typed (`SessionStorageError`), tried again
 *   while the database is busy (./busy.ts: the wait never blocks the event loop; `signal` ends it);
 * - `write`: the same in one write transaction (`BEGIN IMMEDIATE`); `read`: in one read transaction (one snapshot);
 * - `now`: the clock of leases and times (ms); `token`: a new lease token.
 */
export interface SqliteBackend {
  readonly location: string;
  run<T>(sessionId: string | undefined, body: (sql: Statements) => T, signal?: AbortSignal): Promise<T>;
  write<T>(sessionId: string | undefined, body: (sql: Statements) => T, signal?: AbortSignal): Promise<T>;
  read<T>(sessionId: string | undefined, body: (sql: Statements) => T): Promise<T>;
  now(): number;
  token(): string;
}
