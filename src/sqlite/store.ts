import { existsSync } from 'node:fs';
import path from 'node:path';
import { checkDurationMs } from '../duration.js';
import Database from 'better-sqlite3';
import { isConfigurationError } from '../errors.js';
import { checkId } from '../session/checks.js';
import {
  SessionExistsError,
  SessionNotFoundError,
  SessionStorageError,
  isSessionSchemaError,
} from '../session/errors.js';
import { describeHolder, holderEnded, holderToken } from '../session/holder-process.js';
import { refusal } from '../session/lease-errors.js';
import type { SessionInfo, SessionStore } from '../session/session.js';
import { SQLITE_SCHEMA_VERSION, corrupt, isCorruptionError, prepareSchema } from './schema.js';
import { whileBusy } from './busy.js';
import { SqliteSession } from './session.js';
import { prepare, type Statements } from './statements.js';

/**
 * Options of a {@link SqliteSessionStore}.
 * - `busyTimeoutMs`: how long (ms) a read or write waits for another process's write to finish before
 *   it fails with `SessionStorageError` code `SQLITE_BUSY` (default 5000). The wait is on timers, never
 *   inside better-sqlite3's synchronous `busy_timeout`, so the event loop runs on meanwhile (a file the
 *   store opens gets `busy_timeout = 0` once its schema is ready; a `Database` you pass keeps its own
 *   `busy_timeout`, which blocks: set it to 0 for the same behaviour).
 * - `now`: the clock of leases and times (ms since the epoch; default `Date.now`). Processes sharing
 *   a file must share a clock.
 */
export interface SqliteSessionStoreOptions {
  readonly busyTimeoutMs?: number;
  readonly now?: () => number;
}

/**
 * Many sessions in one SQLite file (through better-sqlite3), shared safely by several processes:
 * WAL mode, each append one transaction ("a commit is all or nothing"), leases as rows with an
 * expiry, a schema version with forward migrations run on open. `file` is a path (created when
 * missing; the store closes it on `close()`) or an open better-sqlite3 `Database` (the caller's: the
 * store never closes it).
 *
 * The constructor throws `SessionSchemaError` for a file that is not a database, is corrupt, or was
 * written by a later loopctl (`problem` says which; the file is left as it is, never deleted),
 * `SessionStorageError` when it cannot write the schema (`SQLITE_READONLY`, `SQLITE_BUSY`), and
 * better-sqlite3's own error for a file it cannot open at all (a missing folder).
 * Reads and writes that fail reject with `SessionStorageError` carrying SQLite's code
 * (`SQLITE_FULL` for a full disk, `SQLITE_READONLY` for a read-only file); nothing is stored then.
 *
 * @example
 * const store = new SqliteSessionStore('sessions.db');
 * run(agent, 'hi', { session: store.session('project-a') });
 */
export class SqliteSessionStore implements SessionStore {
  /** The file this store reads (as better-sqlite3 names it), used in error messages. */
  readonly location: string;
  readonly #db: Database.Database;
  readonly #owned: boolean;
  readonly #now: () => number;
  readonly #busyTimeoutMs: number;
  #sql: Statements | undefined;
  #closed = false;

  constructor(file: string | Database.Database, options: SqliteSessionStoreOptions = {}) {
    if (options.busyTimeoutMs !== undefined) checkDurationMs(options.busyTimeoutMs, 'options.busyTimeoutMs');
    this.#owned = typeof file === 'string';
    this.#now = options.now ?? Date.now;
    this.#busyTimeoutMs = options.busyTimeoutMs ?? 5000;
    // Opening is synchronous (a constructor): the schema is prepared with SQLite's own busy wait, then
    // every later statement waits without blocking (./busy.ts).
    this.#db = typeof file === 'string' ? openFile(file, this.#busyTimeoutMs) : file;
    this.location = this.#db.name;
    try {
      this.#open();
      if (this.#owned) this.#db.pragma('busy_timeout = 0');
    } catch (err) {
      if (this.#owned) this.#db.close();
      throw this.#typed(undefined, err); // SQLITE_BUSY or SQLITE_READONLY while preparing the schema
    }
  }

  #open(): void {
    const db = this.#db;
    try {
      // WAL lets readers go on while a run commits; FULL makes a returned commit survive a power cut.
      const mode = db.pragma('journal_mode', { simple: true });
      if (mode !== 'wal' && !db.readonly) db.pragma('journal_mode = WAL');
      if (this.#owned) db.pragma('synchronous = FULL');
    } catch (err) {
      const what = 'not a readable SQLite database';
      if (isCorruptionError(err)) throw corrupt(this.location, SQLITE_SCHEMA_VERSION, what, err);
      throw err;
    }
    prepareSchema(db, this.location);
    this.#sql = prepare(db);
  }

  /** The session named `id` (see `SessionStore.session`). */
  session(id: string): SqliteSession {
    checkId(id, 'id');
    return new SqliteSession(this, id);
  }

  async list(): Promise<readonly SessionInfo[]> {
    return this.run(undefined, (sql) =>
      sql.list.all().map((r) => ({ id: r.id, items: r.items, createdAt: r.created_at, updatedAt: r.updated_at })),
    );
  }

  async delete(id: string): Promise<boolean> {
    checkId(id, 'id');
    return this.write(id, (sql) => {
      this.refuseLeased(sql, id);
      sql.deleteLease.run(id);
      sql.deleteItems.run(id);
      sql.deleteRuns.run(id);
      sql.deleteJournals.run(id);
      return sql.deleteSession.run(id).changes > 0;
    });
  }

  async rename(from: string, to: string): Promise<void> {
    checkId(from, 'from');
    checkId(to, 'to');
    await this.write(from, (sql) => {
      this.refuseLeased(sql, from);
      this.refuseLeased(sql, to);
      if (sql.exists.get(from) === undefined) throw new SessionNotFoundError(from);
      if (sql.exists.get(to) !== undefined) throw new SessionExistsError(to);
      sql.deleteLease.run(from);
      sql.deleteLease.run(to);
      sql.moveItems.run(to, from);
      sql.deleteRuns.run(to); // run ids left under `to` without a session (resumed calls' starts) go first
      sql.moveRuns.run(to, from);
      sql.deleteJournals.run(to);
      sql.moveJournals.run(to, from);
      sql.moveSession.run(to, from);
    });
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#owned) this.#db.close();
  }

  /** @internal The clock of leases and times. */
  now(): number {
    return this.#now();
  }

  /** @internal A new lease token. */
  token(): string {
    return holderToken();
  }

  /** @internal Throws `ConcurrentRunError` when a run holds a live lease on `id`. */
  refuseLeased(sql: Statements, id: string): void {
    const held = sql.lease.get(id);
    if (held === undefined || held.expires_at <= this.#now() || holderEnded(held.token)) return;
    throw refusal(`session "${id}"`, describeHolder(held.run_id, held.token));
  }

  /**
   * @internal Runs `body` with the statements, mapping driver errors to typed ones; while another
   * connection holds the write lock, tries again on timers for up to `busyTimeoutMs` (./busy.ts), until
   * `signal` aborts (rejecting with its reason).
   */
  async run<T>(sessionId: string | undefined, body: (sql: Statements) => T, signal?: AbortSignal): Promise<T> {
    try {
      return await whileBusy(
        () => {
          if (this.#closed || !this.#db.open) {
            throw new SessionStorageError(sessionId, 'closed', `${this.where(sessionId)}: the store is closed`);
          }
          return body(this.#sql!);
        },
        { boundMs: this.#busyTimeoutMs, signal },
      );
    } catch (err) {
      if (signal?.aborted && err === signal.reason) throw err;
      throw this.#typed(sessionId, err);
    }
  }

  /** @internal `body` in one write transaction (BEGIN IMMEDIATE: taken before the first read), as {@link run}. */
  write<T>(sessionId: string | undefined, body: (sql: Statements) => T, signal?: AbortSignal): Promise<T> {
    return this.run(sessionId, (sql) => this.#db.transaction(() => body(sql)).immediate(), signal);
  }

  /** @internal `body` in one read transaction (BEGIN DEFERRED: its statements read one snapshot), as {@link run}. */
  read<T>(sessionId: string | undefined, body: (sql: Statements) => T): Promise<T> {
    return this.run(sessionId, (sql) => this.#db.transaction(() => body(sql)).deferred());
  }

  /** @internal "session "x" in /path/file.db", for messages. */
  where(sessionId: string | undefined): string {
    return sessionId === undefined ? this.location : `session "${sessionId}" in ${this.location}`;
  }

  #typed(sessionId: string | undefined, err: unknown): unknown {
    if (isConfigurationError(err) || isSessionSchemaError(err) || err instanceof SessionNotFoundError) return err;
    if (err instanceof SessionExistsError) return err;
    if (isCorruptionError(err)) return corrupt(this.location, SQLITE_SCHEMA_VERSION, 'the database is corrupt', err);
    const code = (err as { code?: unknown } | null)?.code;
    if (!(err instanceof Database.SqliteError) || typeof code !== 'string') return err;
    const what =
      code === 'SQLITE_FULL'
        ? 'the disk or database is full'
        : code.startsWith('SQLITE_READONLY')
          ? 'the database is read-only'
          : code.startsWith('SQLITE_BUSY')
            ? 'another process kept the database busy'
            : err.message;
    return new SessionStorageError(sessionId, code, `${this.where(sessionId)}: ${what} (${code})`, { cause: err });
  }
}

/**
 * `file` opened by better-sqlite3 (created when missing); `SessionStorageError` naming the file when SQLite cannot
 * open it (a folder or a dangling symlink in its place) or its folder is missing: better-sqlite3's own error names
 * neither the file nor, for a missing folder, a code. An error loading the native module itself is thrown as it is.
 */
function openFile(file: string, timeout: number): Database.Database {
  try {
    return new Database(file, { timeout });
  } catch (err) {
    const sqlite = err instanceof Database.SqliteError;
    if (!sqlite && !(err instanceof TypeError && !existsSync(path.dirname(file)))) throw err;
    const code = sqlite ? err.code : 'SQLITE_CANTOPEN';
    const why = err.message;
    throw new SessionStorageError(undefined, code, `${file}: the database cannot be opened: ${why} (${code})`, {
      cause: err,
    });
  }
}
