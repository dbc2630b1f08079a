import type { Pool, PoolClient, QueryResultRow } from 'pg';
import { isConfigurationError } from '../errors.js';
import { checkId } from '../session/checks.js';
import {
  SessionExistsError,
  SessionNotFoundError,
  SessionSchemaError,
  SessionStorageError,
  isSessionSchemaError,
} from '../session/errors.js';
import { describeHolder, holderEnded } from '../session/holder-process.js';
import { refusal } from '../session/lease-errors.js';
import type { SessionInfo, SessionStore } from '../session/session.js';
import { POSTGRES_SCHEMA_VERSION, checkVersion, quoteIdent, readVersion, schemaName, where } from './schema.js';
import { PostgresSession } from './session.js';
import { sqlFor, type Sql } from './sql.js';

/** Options of a {@link PostgresSessionStore}: `schema`, where its tables are (default `loopctl`). */
export interface PostgresSessionStoreOptions {
  readonly schema?: string;
}

/**
 * Many sessions in one Postgres schema, on a `pg` Pool the caller passes in (and ends: `close()`
 * never ends it). Each append is one statement (atomic: "a commit is all or nothing"), idempotent
 * per `runId` through a unique key; leases are rows whose expiry is read on the server's clock, so
 * every client agrees on it; the items' primary key (session id, seq) is the index a load reads.
 *
 * Tables are never created implicitly: call `createSchema(pool, { schema })` once (and `migrate` after
 * an upgrade). Until then every operation rejects with `SessionSchemaError` (`missing` or `older`,
 * naming the expected version). A failed query rejects with `SessionStorageError` carrying the
 * SQLSTATE (`53100` for a full disk) or the connection error's code; nothing is stored then.
 *
 * @example
 * const pool = new pg.Pool();
 * await createSchema(pool);
 * const store = new PostgresSessionStore(pool);
 * run(agent, 'hi', { session: store.session(userId) });
 */
export class PostgresSessionStore implements SessionStore {
  readonly schema: string;
  /** @internal The statements of this schema. */
  readonly sql: Sql;
  #ready: Promise<void> | undefined;
  #closed = false;

  constructor(
    readonly pool: Pool,
    options: PostgresSessionStoreOptions = {},
  ) {
    this.schema = schemaName(options);
    this.sql = sqlFor(quoteIdent(this.schema));
  }

  /** The session named `id` (see `SessionStore.session`). */
  session(id: string): PostgresSession {
    checkId(id, 'id');
    return new PostgresSession(this, id);
  }

  async list(): Promise<readonly SessionInfo[]> {
    const rows = await this.query<{ id: string; items: number; created_at: string; updated_at: string }>(
      undefined,
      this.sql.list,
      [],
    );
    return rows.map((r) => ({
      id: r.id,
      items: r.items,
      createdAt: Number(r.created_at),
      updatedAt: Number(r.updated_at),
    }));
  }

  async delete(id: string): Promise<boolean> {
    checkId(id, 'id');
    return this.transaction(id, async (client) => {
      await this.#hold(client, id);
      const deleted = await client.query(this.sql.deleteSession, [id]);
      return (deleted.rowCount ?? 0) > 0;
    });
  }

  async rename(from: string, to: string): Promise<void> {
    checkId(from, 'from');
    checkId(to, 'to');
    await this.transaction(from, async (client) => {
      for (const id of [from, to].sort()) await this.#hold(client, id); // one order: two renames cannot deadlock
      const found = (await client.query(this.sql.exists, [from, to])).rows.map((r: { id: string }) => r.id);
      if (!found.includes(from)) throw new SessionNotFoundError(from);
      if (found.includes(to)) throw new SessionExistsError(to);
      // Run ids left under `to` without a session (resumed calls' starts, docs/sessions.md) go first.
      await client.query(this.sql.dropRuns, [to]);
      await client.query(this.sql.move, [from, to]);
      await client.query(this.sql.dropLeases, [[from, to]]);
    });
  }

  /** Marks the store closed (later calls reject with `SessionStorageError` code `closed`); the pool is the caller's. */
  async close(): Promise<void> {
    this.#closed = true;
  }

  /**
   * Takes the lease on `id` inside the transaction (refusing as `acquire` does while a run holds one),
   * so no run can start on it until the transaction ends; the caller removes the row before commit.
   */
  async #hold(client: PoolClient, id: string): Promise<void> {
    const taken = await client.query(this.sql.take, [id, '(store)', 'store', 60_000]);
    if (taken.rowCount === 0) await this.refuse(client, id, '(store)', 'store', 60_000);
  }

  /**
   * @internal After `take` found a live lease on `id`: takes it for `runId` (`token`, `ms`) when its holder is a
   * process on this host that no longer exists (resolving), else rejects with `ConcurrentRunError` naming the
   * run and process holding it.
   */
  async refuse(client: Pool | PoolClient, id: string, runId: string, token: string, ms: number): Promise<void> {
    const held = (await client.query<{ run_id: string; token: string }>(this.sql.holder, [id])).rows[0];
    if (held !== undefined && holderEnded(held.token)) {
      const taken = await client.query(this.sql.takeOver, [id, runId, token, ms, held.token]);
      if (taken.rowCount === 1) return;
    }
    if (held === undefined) {
      // Released or expired since `take` looked: take it now, or name whoever was quicker.
      const again = await client.query(this.sql.take, [id, runId, token, ms]);
      if (again.rowCount === 1) return;
    }
    throw refusal(`session "${id}"`, held ? describeHolder(held.run_id, held.token) : 'another run');
  }

  /** @internal One query on the pool, after the schema check, with errors typed. */
  async query<R extends QueryResultRow>(sessionId: string | undefined, text: string, params: unknown[]): Promise<R[]> {
    await this.ready(sessionId);
    try {
      return (await this.pool.query<R>(text, params)).rows;
    } catch (err) {
      throw this.typed(sessionId, err);
    }
  }

  /** @internal `body` in a transaction on one client, after the schema check, with errors typed. */
  async transaction<T>(sessionId: string | undefined, body: (client: PoolClient) => Promise<T>): Promise<T> {
    await this.ready(sessionId);
    let client: PoolClient;
    try {
      client = await this.pool.connect();
    } catch (err) {
      throw this.typed(sessionId, err);
    }
    try {
      await client.query('BEGIN');
      const result = await body(client);
      await client.query('COMMIT');
      return result;
    } catch (err) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw this.typed(sessionId, err);
    } finally {
      client.release();
    }
  }

  /** @internal Resolves once the schema is at {@link POSTGRES_SCHEMA_VERSION} (checked once per store). */
  ready(sessionId: string | undefined): Promise<void> {
    if (this.#closed) {
      const message = `${this.where(sessionId)}: the store is closed`;
      return Promise.reject(new SessionStorageError(sessionId, 'closed', message));
    }
    this.#ready ??= readVersion(this.pool, this.schema)
      .then((found) => checkVersion(this.schema, found))
      .catch((err: unknown) => {
        this.#ready = undefined; // checked again next time: the schema may be created meanwhile
        throw this.typed(sessionId, err);
      });
    return this.#ready;
  }

  /** @internal "session "x" in Postgres schema "s"", for messages. */
  where(sessionId: string | undefined): string {
    return sessionId === undefined ? where(this.schema) : `session "${sessionId}" in ${where(this.schema)}`;
  }

  /** @internal A driver error as `SessionSchemaError` (tables gone) or `SessionStorageError`. */
  typed(sessionId: string | undefined, err: unknown): unknown {
    if (isConfigurationError(err) || isSessionSchemaError(err) || err instanceof SessionStorageError) return err;
    if (err instanceof SessionNotFoundError || err instanceof SessionExistsError) return err;
    const code = (err as { code?: unknown } | null)?.code;
    if (code === '42P01' || code === '3F000') {
      const location = where(this.schema);
      const init = { problem: 'missing' as const, expectedVersion: POSTGRES_SCHEMA_VERSION, location };
      return new SessionSchemaError(init, `loopctl tables are missing: run createSchema(pool)`, { cause: err });
    }
    const message = (err as { message?: unknown } | null)?.message;
    const text = typeof message === 'string' ? message : String(err);
    const kind = typeof code === 'string' ? code : 'unknown';
    return new SessionStorageError(sessionId, kind, `${this.where(sessionId)}: ${text} (${kind})`, { cause: err });
  }
}
