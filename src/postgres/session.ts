import { isConcurrentRunError } from '../errors.js';
import type { Item } from '../items.js';
import {
  alreadyResumed,
  appendRunId,
  callStartKey,
  checkClaim,
  checkFenceJournal,
  checkId,
  checkItems,
  checkJournalTurn,
  journalOf,
  checkTtl,
  fenceKey,
  historyOf,
  suspensionKey,
} from '../session/checks.js';
import { JournalFencedError, SessionSchemaError } from '../session/errors.js';
import { holderToken } from '../session/holder-process.js';
import { leaseLost } from '../session/lease-errors.js';
import type {
  AppendOptions,
  CallStartOptions,
  JournalOptions,
  Lease,
  LeaseOptions,
  RunJournal,
  Session,
} from '../session/session.js';
import { POSTGRES_SCHEMA_VERSION, where } from './schema.js';
import type { PostgresBackend } from './backend.js';

/**
 * One session of a `PostgresSessionStore` (made by `store.session(id)`): the `Session` contract
 * on a Postgres server.
 * - `load()`: the Items in append order; rejects with `SessionSchemaError` (`corrupt`, naming the row) for a
 *   stored row that is not JSON or not an Item, a row missing from the sequence, or a stored count that
 *   disagrees with the rows (`historyOf`); `SessionStorageError` when the query fails.
 * - `append(items, { runId, signal })`: one statement ("a commit is all or nothing"), idempotent per
 *   `runId`; a `signal` aborted before it is sent stores nothing and rejects with its reason (once
 *   sent, "the commit cannot be cancelled": it resolves when it stored). Rejects with
 *   `ConfigurationError` naming the field for a value that is not an Item, `SessionStorageError`
 *   (with the SQLSTATE) when the write fails.
 * - `acquire(runId, { ttlMs })`: a lease row whose expiry is on the server's clock.
 * - `recordCallStart(suspensionId, callId)`: one insert among the session's run ids (its unique key
 *   decides: of two clients recording one call exactly one gets `true`).
 */
export class PostgresSession implements Session {
  constructor(
    private readonly store: PostgresBackend,
    readonly id: string,
  ) {}

  async load(): Promise<readonly Item[]> {
    type Row = { total: number | null; seq: number | null; item: string };
    const rows = await this.store.query<Row>(this.id, this.store.sql.load, [this.id]);
    const location = where(this.store.schema);
    const init = { problem: 'corrupt' as const, expectedVersion: POSTGRES_SCHEMA_VERSION, location };
    const stored = rows.filter((row) => row.seq !== null) as { seq: number; item: string }[];
    return historyOf(this.id, rows[0]?.total ?? null, stored, (what, cause) => {
      return new SessionSchemaError(init, what, { cause });
    });
  }

  async append(items: readonly Item[], options?: AppendOptions): Promise<void> {
    checkItems(items);
    const runId = appendRunId(options);
    const suspension = suspensionKey(options);
    const rows = items.map((item) => JSON.stringify(item));
    const { sql } = this.store;
    await this.store.ready(this.id);
    const signal = options?.signal;
    if (signal?.aborted) throw signal.reason; // a write not sent when its deadline passed is not sent
    if (suspension !== undefined) {
      const params = [this.id, runId ?? null, rows.length, rows, suspension];
      const [row] = await this.store.query<{ stored: number; repeat: boolean }>(this.id, sql.appendSuspended, params);
      if (row !== undefined && row.stored === 0 && !row.repeat) throw alreadyResumed(options);
      return;
    }
    const text = runId === undefined ? sql.appendBare : sql.appendRun;
    await this.store.query(this.id, text, [this.id, runId ?? null, rows.length, rows]);
  }

  /**
   * Records the start of a resumed call (see `Session.recordCallStart`): resolves `true` when this
   * record stored, `false` when `(suspensionId, callId)` was recorded before. Rejects with
   * `ConfigurationError` for a bad id, `SessionStorageError` (with the SQLSTATE) when the write fails, and
   * `JournalFencedError` for a claim the run's journal fence refuses (read under a share lock of its row).
   */
  async recordCallStart(suspensionId: string, callId: string, options?: CallStartOptions): Promise<boolean> {
    const key = callStartKey(suspensionId, callId);
    const claim = checkClaim(options?.claim);
    const { sql } = this.store;
    if (claim === undefined) return (await this.store.query(this.id, sql.recordCallStart, [this.id, key])).length === 1;
    type Row = { fence: number | null; stored: number };
    const [row] = await this.store.query<Row>(this.id, sql.recordClaimedStart, [this.id, key, suspensionId, claim]);
    if (row?.fence != null && row.fence > claim) throw new JournalFencedError(suspensionId, claim, row.fence);
    return row?.stored === 1;
  }

  /**
   * Fences off the commit of `runId` (see `Session.fenceRun`): `'committed'` when an append of it stored
   * first, else `'fenced'`. Two statements: the fence (a run row, and its mark only with it: one statement,
   * atomic with an append's run row), then a read of the mark, which exists exactly when a fence won.
   * Rejects with `ConfigurationError` for a bad id, `SessionStorageError` when a statement fails.
   */
  async fenceRun(runId: string): Promise<'committed' | 'fenced'> {
    const mark = fenceKey(runId);
    const { sql } = this.store;
    await this.store.query(this.id, sql.fenceRun, [this.id, runId, mark]);
    const rows = await this.store.query(this.id, sql.fenced, [this.id, mark]);
    return rows.length > 0 ? 'fenced' : 'committed';
  }

  /** Ends the lease `runId` holds, whoever holds it (see `Session.releaseRun`). */
  async releaseRun(runId: string): Promise<void> {
    checkId(runId, 'runId');
    await this.store.query(this.id, this.store.sql.releaseRun, [this.id, runId]);
  }

  /**
   * Journals a completed turn (see `Session.journalTurn`): one insert, nothing when `(runId, turn)` is
   * journalled already or the run's commit is stored. Rejects with `ConfigurationError` for bad
   * arguments, the signal's reason when it fired before the statement was sent, `SessionStorageError`
   * (with the SQLSTATE) when the write fails.
   */
  async journalTurn(runId: string, turn: number, items: readonly Item[], options?: JournalOptions): Promise<void> {
    return this.#journal(runId, turn, turn, items, options);
  }

  /**
   * Journals a turn's model response before its tools run (see `Session.journalResponse`): a row under
   * turn `-turn` beside the completed turns, written as `journalTurn` writes (same errors).
   */
  async journalResponse(runId: string, turn: number, items: readonly Item[], options?: JournalOptions): Promise<void> {
    return this.#journal(runId, turn, -turn, items, options);
  }

  async #journal(runId: string, turn: number, key: number, items: readonly Item[], options?: JournalOptions) {
    checkJournalTurn(runId, turn, items);
    const claim = checkClaim(options?.claim);
    const text = `[${items.map((item) => JSON.stringify(item)).join(',')}]`;
    await this.store.ready(this.id);
    const signal = options?.signal;
    if (signal?.aborted) throw signal.reason;
    const { sql } = this.store;
    if (claim === undefined)
      return void (await this.store.query(this.id, sql.journalTurn, [this.id, runId, key, text]));
    const rows = await this.store.query<{ claim: number }>(this.id, sql.journalClaimed, [
      this.id,
      runId,
      key,
      text,
      claim,
    ]);
    const fence = rows[0]?.claim;
    if (fence !== undefined && fence !== claim) throw new JournalFencedError(runId, claim, fence);
  }

  /**
   * Fences off the journal writes of `runId`'s claim `claim` and earlier (see `Session.fenceJournal`): one
   * upsert of the run's fence row. Rejects with `ConfigurationError` for bad arguments, `SessionStorageError`
   * (with the SQLSTATE) when the write fails.
   */
  async fenceJournal(runId: string, claim: number): Promise<void> {
    checkFenceJournal(runId, claim);
    await this.store.query(this.id, this.store.sql.fenceJournal, [this.id, runId, claim + 1]);
  }

  /**
   * The journal of `runId` (see `Session.readJournal`), read in one snapshot; `SessionSchemaError` (`corrupt`,
   * naming the run and the turn) for a row that is not JSON, not an array of Items, or under a turn that is
   * not a non-zero integer.
   */
  async readJournal(runId: string): Promise<RunJournal> {
    checkId(runId, 'runId');
    type Row = { turn: number | null; items: string | null; sealed: boolean };
    const rows = await this.store.query<Row>(this.id, this.store.sql.readJournal, [this.id, runId]);
    const sealed = rows[0]?.sealed ?? false;
    if (sealed) return { sealed, turns: [] };
    const init = {
      problem: 'corrupt' as const,
      expectedVersion: POSTGRES_SCHEMA_VERSION,
      location: where(this.store.schema),
    };
    const named = (what: string): string =>
      what.replace(/^turn \S+/, (t) => `${t} of run "${runId}" in session "${this.id}"`);
    const entries: { turn: unknown; items: unknown }[] = [];
    for (const row of rows) {
      if (row.turn === null || row.items === null) continue;
      try {
        entries.push({ turn: row.turn, items: JSON.parse(row.items) as unknown });
      } catch (err) {
        throw new SessionSchemaError(init, named(`turn ${row.turn} is not JSON`), { cause: err });
      }
    }
    return journalOf(sealed, entries, (what) => new SessionSchemaError(init, named(what)));
  }

  /** Removes the journal of `runId` and the call starts recorded under it; idempotent. Its claim fence stays. */
  async discardJournal(runId: string): Promise<void> {
    checkId(runId, 'runId');
    await this.store.query(this.id, this.store.sql.discardJournal, [this.id, runId]);
  }

  /** The runs with a journal, the one journalled last at the end (by the server's time of its last turn). */
  async journalledRuns(): Promise<readonly string[]> {
    const rows = await this.store.query<{ run_id: string }>(this.id, this.store.sql.journalledRuns, [this.id]);
    return rows.map((row) => row.run_id);
  }

  /**
   * Leases the session to `runId` for `options.ttlMs` ms (see `Lease`), for every client of the
   * database. Rejects with `ConcurrentRunError` while another run holds a live lease, and with
   * `ConfigurationError` for a bad `runId` or `ttlMs`.
   */
  async acquire(runId: string, options: LeaseOptions): Promise<Lease> {
    checkId(runId, 'runId');
    const ttlMs = checkTtl(options);
    const { id, store } = this;
    const token = holderToken();
    const ms = Math.ceil(ttlMs);
    const taken = await store.query(id, store.sql.take, [id, runId, token, ms]);
    if (taken.length === 0)
      await store.refuse(store.pool, id, runId, token, ms).catch((err: unknown) => {
        throw isConcurrentRunError(err) ? err : store.typed(id, err);
      });
    return {
      runId,
      ttlMs,
      renew: async () => {
        await store.ready(id);
        const result = await store.pool.query(store.sql.renew, [id, token, ms]).catch((err: unknown) => {
          throw store.typed(id, err);
        });
        if (result.rowCount === 0) throw leaseLost(runId, `session "${id}"`);
      },
      release: async () => {
        await store.query(id, store.sql.release, [id, token]);
      },
    };
  }
}
