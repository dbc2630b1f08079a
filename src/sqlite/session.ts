import type { Item } from '../items.js';
import {
  alreadyResumed,
  appendRunId,
  callStartKey,
  callStartPrefix,
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
import { JournalFencedError } from '../session/errors.js';
import { describeHolder, holderEnded } from '../session/holder-process.js';
import { leaseLost, refusal } from '../session/lease-errors.js';
import type {
  AppendOptions,
  CallStartOptions,
  JournalOptions,
  Lease,
  LeaseOptions,
  RunJournal,
  Session,
} from '../session/session.js';
import { SQLITE_SCHEMA_VERSION, corrupt } from './schema.js';
import type { SqliteBackend } from './backend.js';
import type { Statements } from './statements.js';

/**
 * One session of a `SqliteSessionStore` (made by `store.session(id)`): the `Session` contract
 * on a SQLite file. Each method runs its statements on the store's connection and returns a Promise;
 * while another process holds the write lock it waits on timers (never blocking the event loop), up to
 * the store's `busyTimeoutMs`, then rejects with `SessionStorageError` (`SQLITE_BUSY`).
 * - `load()`: the Items in append order; rejects with `SessionSchemaError` (`corrupt`, naming the row) for a
 *   stored row that is not JSON or not an Item, a row missing from the sequence, or a stored count that
 *   disagrees with the rows (`historyOf`); `SessionStorageError` when the file cannot be read.
 * - `append(items, { runId, signal })`: one transaction ("a commit is all or nothing"), idempotent per
 *   `runId`; a second commit of one `suspensionId` rejects with `ResumeError` (`already_resumed`),
 *   storing nothing; a `signal` already aborted, or aborted while the write waits for the lock, stores
 *   nothing and rejects with its reason. Rejects with
 *   `ConfigurationError` naming the field for a value that is not an Item, `SessionStorageError`
 *   (`SQLITE_FULL`, `SQLITE_READONLY`, `SQLITE_BUSY`, `closed`) when the write fails.
 * - `acquire(runId, { ttlMs })`: a lease row with an expiry, shared by every process using the file.
 * - `recordCallStart(suspensionId, callId)`: one insert among the session's run ids, in a write
 *   transaction, so of two processes recording one call exactly one gets `true`.
 */
export class SqliteSession implements Session {
  constructor(
    private readonly store: SqliteBackend,
    readonly id: string,
  ) {}

  async load(): Promise<readonly Item[]> {
    // The count and the rows in one read transaction: one snapshot, whatever another process commits meanwhile.
    const { count, rows } = await this.store.read(this.id, (sql) => ({
      count: sql.count.get(this.id) ?? null,
      rows: sql.history.all(this.id).map(([seq, item]) => ({ seq, item })),
    }));
    return historyOf(this.id, count, rows, (what, cause) =>
      corrupt(this.store.location, SQLITE_SCHEMA_VERSION, what, cause),
    );
  }

  async append(items: readonly Item[], options?: AppendOptions): Promise<void> {
    checkItems(items);
    const runId = appendRunId(options);
    const suspension = suspensionKey(options);
    const signal = options?.signal;
    if (signal?.aborted) throw signal.reason; // a write not begun when its deadline passed is not begun
    const rows = items.map((item) => JSON.stringify(item));
    await this.store.write(
      this.id,
      (sql) => {
        if (runId !== undefined && sql.hasRun.get(this.id, runId) !== undefined) return;
        if (suspension !== undefined && sql.hasRun.get(this.id, suspension) !== undefined)
          throw alreadyResumed(options);
        const now = this.store.now();
        let seq = sql.count.get(this.id) ?? 0;
        for (const row of rows) sql.insertItem.run(this.id, seq++, row);
        if (runId !== undefined) sql.insertRun.run(this.id, runId, now);
        if (runId !== undefined) this.#dropJournal(sql, runId); // the commit seals the run's journal
        if (suspension !== undefined) sql.insertRun.run(this.id, suspension, now);
        sql.touch.run(this.id, rows.length, now, now);
      },
      signal,
    );
  }

  /**
   * Records the start of a resumed call (see `Session.recordCallStart`): resolves `true` when this
   * record stored, `false` when `(suspensionId, callId)` was recorded before. Rejects with
   * `ConfigurationError` for a bad id, `SessionStorageError` when the write fails (nothing stored), and
   * `JournalFencedError` for a claim the run's journal fence refuses (checked in the same transaction).
   */
  async recordCallStart(suspensionId: string, callId: string, options?: CallStartOptions): Promise<boolean> {
    const key = callStartKey(suspensionId, callId);
    const claim = checkClaim(options?.claim);
    return this.store.write(this.id, (sql) => {
      const fence = claim === undefined ? 0 : (sql.journalFence.get(this.id, suspensionId) ?? 0);
      if (claim !== undefined && claim < fence) throw new JournalFencedError(suspensionId, claim, fence);
      if (sql.hasRun.get(this.id, key) !== undefined) return false;
      sql.insertRun.run(this.id, key, this.store.now());
      return true;
    });
  }

  /**
   * Fences off the commit of `runId` (see `Session.fenceRun`): `'committed'` when an append of it stored
   * first, else `'fenced'`; in one write transaction. Rejects with `ConfigurationError` for a bad id,
   * `SessionStorageError` when the write fails (nothing stored).
   */
  async fenceRun(runId: string): Promise<'committed' | 'fenced'> {
    const mark = fenceKey(runId);
    return this.store.write(this.id, (sql) => {
      if (sql.hasRun.get(this.id, runId) !== undefined) {
        return sql.hasRun.get(this.id, mark) !== undefined ? 'fenced' : 'committed';
      }
      const now = this.store.now();
      sql.insertRun.run(this.id, runId, now);
      sql.insertRun.run(this.id, mark, now);
      return 'fenced';
    });
  }

  /** Ends the lease `runId` holds, whoever holds it (see `Session.releaseRun`). */
  async releaseRun(runId: string): Promise<void> {
    checkId(runId, 'runId');
    await this.store.write(this.id, (sql) => void sql.releaseRun.run(this.id, runId));
  }

  /**
   * Journals a completed turn (see `Session.journalTurn`): one insert in a write transaction, nothing
   * when `(runId, turn)` is journalled already or the run's commit is stored. Rejects with
   * `ConfigurationError` for bad arguments, the signal's reason when it fired before the write began,
   * `SessionStorageError` when the write fails (nothing stored).
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
    const signal = options?.signal;
    if (signal?.aborted) throw signal.reason;
    const text = `[${items.map((item) => JSON.stringify(item)).join(',')}]`;
    await this.store.write(
      this.id,
      (sql) => {
        if (sql.hasRun.get(this.id, runId) !== undefined) return; // sealed: the run committed
        const now = this.store.now();
        if (claim !== undefined) {
          // The fence and the write in one transaction: a later claim's fence lands before or after, whole.
          const fence = sql.journalFence.get(this.id, runId) ?? 0;
          if (claim < fence) throw new JournalFencedError(runId, claim, fence);
          sql.raiseFence.run(this.id, runId, now, claim);
        }
        sql.journalTurn.run(this.id, runId, key, text, now, claim ?? null);
      },
      signal,
    );
  }

  /**
   * Fences off the journal writes of `runId`'s claim `claim` and earlier (see `Session.fenceJournal`): one
   * upsert of the run's fence row. Rejects with `ConfigurationError` for bad arguments, `SessionStorageError`
   * when the write fails (nothing stored).
   */
  async fenceJournal(runId: string, claim: number): Promise<void> {
    checkFenceJournal(runId, claim);
    await this.store.write(this.id, (sql) => void sql.raiseFence.run(this.id, runId, this.store.now(), claim + 1));
  }

  /** Removes the journal of `runId` (not its fence) and the call starts recorded under it. */
  #dropJournal(sql: Statements, runId: string): void {
    sql.dropJournal.run(this.id, runId);
    const prefix = callStartPrefix(runId);
    sql.dropCallStarts.run(this.id, prefix, prefix);
  }

  /**
   * The journal of `runId` (see `Session.readJournal`); `SessionSchemaError` (`corrupt`, naming the run and the
   * turn) for a row that is not JSON, not an array of Items, or under a turn that is not a non-zero integer.
   */
  async readJournal(runId: string): Promise<RunJournal> {
    checkId(runId, 'runId');
    const { rows, sealed } = await this.store.run(this.id, (sql) => ({
      rows: sql.journal.all(this.id, runId),
      sealed: sql.hasRun.get(this.id, runId) !== undefined,
    }));
    if (sealed) return { sealed, turns: [] }; // a commit that landed between the two reads
    const where = (what: string): string =>
      `${what.replace(/^turn \S+/, (t) => `${t} of run "${runId}" in session "${this.id}"`)}`;
    const entries = rows.map((row) => {
      try {
        return { turn: row.turn as unknown, items: JSON.parse(row.items) as unknown };
      } catch (err) {
        throw corrupt(this.store.location, SQLITE_SCHEMA_VERSION, where(`turn ${row.turn} is not JSON`), err);
      }
    });
    return journalOf(sealed, entries, (what) => corrupt(this.store.location, SQLITE_SCHEMA_VERSION, where(what)));
  }

  /** Removes the journal of `runId` and the call starts recorded under it; idempotent. Its claim fence stays. */
  async discardJournal(runId: string): Promise<void> {
    checkId(runId, 'runId');
    await this.store.write(this.id, (sql) => this.#dropJournal(sql, runId));
  }

  /** The runs with a journal, the one journalled last at the end (by the time of its last turn). */
  async journalledRuns(): Promise<readonly string[]> {
    return this.store.run(this.id, (sql) => sql.journalledRuns.all(this.id));
  }

  /**
   * Leases the session to `runId` for `options.ttlMs` ms (see `Lease`), across every process using
   * the file. Rejects with `ConcurrentRunError` while another run holds a live lease, and with
   * `ConfigurationError` for a bad `runId` or `ttlMs`.
   */
  async acquire(runId: string, options: LeaseOptions): Promise<Lease> {
    checkId(runId, 'runId');
    const ttlMs = checkTtl(options);
    const token = this.store.token();
    const { id, store } = this;
    await store.write(id, (sql) => {
      const now = store.now();
      if (sql.take.get(id, runId, token, now + ttlMs, now) !== undefined) return;
      // A live lease: taken at once when its holder is a process on this host that no longer exists.
      const held = sql.lease.get(id);
      if (held !== undefined && holderEnded(held.token)) {
        sql.takeOver.run(runId, token, now + ttlMs, id, held.token);
        return;
      }
      throw refusal(`session "${id}"`, held ? describeHolder(held.run_id, held.token) : 'another run');
    });
    return {
      runId,
      ttlMs,
      renew: async () => {
        const changes = await store.run(id, (sql) => sql.renew.run(store.now() + ttlMs, id, token).changes);
        if (changes === 0) throw leaseLost(runId, `session "${id}"`);
      },
      release: async () => {
        await store.run(id, (sql) => sql.release.run(id, token));
      },
    };
  }
}
