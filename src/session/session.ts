import type { Observable } from 'rxjs';
import type { Item } from '../items.js';

/** A value, a Promise of it, or an Observable whose last value is it. */
export type MaybeAsync<T> = T | PromiseLike<T> | Observable<T>;

/**
 * What `append` is told about a write.
 * - `runId`: the run the Items come from. An append is idempotent per `runId`: a store that already
 *   holds a write for this `runId` stores nothing ("a late write is harmless"). Absent for a bare
 *   `commitPartial(session, partial)`, which is then not idempotent.
 * - `signal`: aborts when the write should stop; a run's commit aborts it at `deadlines.commitMs`
 *   with a `TimeoutError` of kind `commit` as its reason. The run has ended `session_error` by then;
 *   a write that lands afterwards must still be all or nothing.
 * - `suspensionId`: the commit of a run resumed from a suspension (docs/run-control.md, "Approvals")
 *   carries its id. A session refuses a second commit with the same id: it stores nothing and rejects
 *   with `ResumeError` (`code: 'already_resumed'`) — unless the commit's `runId` was stored already,
 *   which stores nothing and succeeds, as for any repeat. Stores keep it among the session's run ids
 *   as `suspension:<id>`, so it moves and is deleted with them.
 */
export interface AppendOptions {
  readonly runId?: string;
  readonly signal?: AbortSignal;
  readonly suspensionId?: string;
}

/** What `acquire` is told: `ttlMs`, how long (ms, > 0) the lease lasts unless renewed. */
export interface LeaseOptions {
  readonly ttlMs: number;
}

/**
 * A run's hold on a session ("one run per mailbox and session", across processes): while it is
 * live, every other `acquire` on the session is refused. It lasts `ttlMs` from the last `acquire`
 * or `renew`; a holder that dies stops renewing, so its lease expires and the next `acquire`
 * succeeds ("a dead holder's lease expires"). The SQLite and Postgres stores also record the holder's pid and
 * host: a lease whose holder is a process on the same host that no longer exists is taken at once.
 * - `renew()`: extends the lease to `ttlMs` from now. Rejects with `ConcurrentRunError` when the
 *   lease was lost: released, or expired and taken by another run.
 * - `release()`: gives the lease up; idempotent, and a lease lost to another run is left to it.
 */
export interface Lease {
  readonly runId: string;
  readonly ttlMs: number;
  renew(): Promise<void>;
  release(): Promise<void>;
}

/**
 * Conversation memory (guarantee 6: scratchpad: only a completed run commits). A run loads the history
 * once (raced against cancel: checkpoint 12: session load), works on a copy (the
 * scratchpad), and only a completed run calls `append` — once, with all its
 * new Items and `{ runId, signal }`, before `run_completed`. `append` is never cancelled ("the commit
 * cannot be cancelled") but it is bounded by `deadlines.commitMs`: past it, or when it throws, rejects
 * or errors, the run ends `run_failed` with `stopReason: 'session_error'` and its Items in `partial`.
 *
 * Every implementation must store each `append` whole or not at all ("a commit is all or nothing"),
 * make it idempotent per `runId` (see {@link AppendOptions}), and have `load` give back exactly the
 * Items appended, in append order (repairing a history is the engine's job, not the store's).
 * `sessionContract` in `loopctl/node/testing` checks all of this.
 *
 * One active run per session: a second concurrent run fails at start. A session shared across
 * processes provides `acquire(runId, { ttlMs })`, which gives a {@link Lease} (as a value, a Promise
 * or an Observable, like `load` and `append`: an in-memory store answers synchronously, so a run in
 * virtual time is not held up) or fails with `ConcurrentRunError` while another run holds one. A run
 * takes the lease at its start, renews it every `ttlMs / 3` and releases it before its terminal event.
 */
export interface Session {
  load(): MaybeAsync<readonly Item[]>;
  append(items: readonly Item[], options?: AppendOptions): MaybeAsync<void>;
  acquire?(runId: string, options: LeaseOptions): MaybeAsync<Lease>;
  /**
   * Records that a run resumed from the suspension `suspensionId` starts the call `callId` of the
   * suspended batch (docs/run-control.md, "Exactly once across resumes"), durably, before the tool
   * runs: gives `true` when this record stored, `false` when one for the same `(suspensionId, callId)`
   * was stored before (by any run, in any process): the call started in an earlier resume and must
   * not run again. Idempotent: a repeat stores nothing and gives `false`. The record is not Items: it
   * does not create the session nor change `load`, `list` or `updatedAt`; stores keep it among the
   * session's run ids (`call:["<suspensionId>","<callId>"]`), so it moves and is deleted with them; the starts
   * a journalling run records under its own run id go with its journal (its commit, `discardJournal`).
   * Throws or rejects with `ConfigurationError` naming `suspensionId` or `callId` for an id that is
   * not one (see `MAX_ID_LENGTH`), storing nothing. Optional: without it, a resumed run records the
   * start in its own process only. `sessionContract` checks it for every store that has it.
   *
   * `options.claim` (a journalling run's start, `suspensionId` its run id): fenced per claim as
   * `journalTurn` is — refused with `JournalFencedError`, storing nothing, once a later claim took the run's
   * journal over, so a lost claim that comes back never starts a tool. Absent: not fenced.
   */
  recordCallStart?(suspensionId: string, callId: string, options?: CallStartOptions): MaybeAsync<boolean>;
  /**
   * Fences off the commit of `runId` (docs/scale-out.md, "Fencing"): unless an append of `runId` was stored,
   * records `runId` as stored without Items, so that a later append of it stores nothing ("a late write is
   * harmless"). Gives `'committed'` when an append of `runId` stored before any fence (its Items are in the
   * session), `'fenced'` otherwise (by this call or an earlier one): the answer is the same however often it
   * is asked. Atomic with `append`: of a fence and a commit of one `runId`, exactly one wins. Not Items: it does
   * not create the session nor change `load`, `list` or `updatedAt`; stores keep it among the session's run ids
   * (`runId` and `fence:<runId>`). Throws or rejects with `ConfigurationError` naming `runId` for an id that
   * is not one. Optional: a peer that declares a queued run's worker lost uses it when the store has it.
   */
  fenceRun?(runId: string): MaybeAsync<'committed' | 'fenced'>;
  /**
   * Ends the lease `runId` holds, whichever process holds it: its holder is known ended (a queued run's
   * worker declared lost), so the next `acquire` takes the session at once instead of after the lease's
   * `ttlMs`; a renewal by the old holder then rejects with `ConcurrentRunError`. A lease of another run is
   * left alone. Resolves whether or not `runId` held one. Optional.
   */
  releaseRun?(runId: string): MaybeAsync<void>;
  /**
   * Journals one completed turn of the run `runId` (docs/sessions.md, "The run journal"): `items` are the
   * Items the run added since its previous journalled turn (the first turn's include the run's input),
   * stored whole or not at all under `(runId, turn)`. Idempotent: a second write of one `(runId, turn)`
   * stores nothing, and so does a write for a run whose commit is stored (its journal is sealed). A
   * journal is not the history: `load`, `list` and `updatedAt` do not see it, and it does not create
   * the session. `turn` is a whole number ≥ 1. `signal` as for `append`: a write not begun when it
   * fired is not begun. Throws or rejects with `ConfigurationError` naming `runId`, `turn` or
   * `items[i]…`, storing nothing. Optional, with {@link Session.readJournal} and
   * {@link Session.discardJournal}: a session with all three makes runs durable per turn.
   *
   * Fenced per claim (docs/sessions.md, "Claims"): a write with `options.claim` c is refused — it rejects
   * (or throws) with `JournalFencedError` and stores nothing — once the run's journal belongs to a later
   * claim: one that wrote with a claim above c, or that {@link Session.fenceJournal} fenced c off for. An
   * accepted write with a claim makes the journal that claim's (every lower claim is refused from then on).
   * A write without `claim` is not fenced (a run in one process).
   */
  journalTurn?(runId: string, turn: number, items: readonly Item[], options?: JournalOptions): MaybeAsync<void>;
  /**
   * Journals the model response of the turn `turn` of the run `runId` before its tools run
   * (docs/sessions.md, "No tool runs twice"): `items` are the Items the run added since its previous
   * journalled turn, up to and including the response's `assistant` Item with its tool calls. Kept apart
   * from the completed turns: `readJournal` gives it as `pending` while `turn` has not been journalled
   * by `journalTurn`, so a continue reuses the response instead of asking the model again. Idempotent
   * like `journalTurn` (a second write of one `(runId, turn)` stores nothing, nor does a write for a
   * sealed run), with the same checks and errors, and removed with the journal (seal, discard).
   * Optional: without it a continue redoes the turn that was under way from its model call. Fenced per
   * claim as `journalTurn` is (`JournalFencedError`).
   */
  journalResponse?(runId: string, turn: number, items: readonly Item[], options?: JournalOptions): MaybeAsync<void>;
  /**
   * The journal of `runId` for a continue: its turns in turn order, and `sealed`, true when the run's
   * commit (an `append` with that `runId`) is stored: the commit removed the journal in the same write,
   * so a sealed run has no turns and must not be continued. A run never journalled gives
   * `{ sealed: false, turns: [] }`.
   */
  readJournal?(runId: string): MaybeAsync<RunJournal>;
  /**
   * Removes the journal of `runId` (a cancelled or failed run's) and the call starts the run recorded under
   * its id (`recordCallStart(runId, …)`); idempotent, leaves the history alone. The journal's claim fence
   * ({@link Session.fenceJournal}) stays: a claim fenced off before the discard is refused after it too.
   */
  discardJournal?(runId: string): MaybeAsync<void>;
  /**
   * Fences off the journal writes of the claim `claim` of `runId` and of every earlier claim (docs/scale-out.md,
   * "Continuing a lost run"): from then on a `journalTurn` or `journalResponse` of `runId` with
   * `options.claim` ≤ `claim` is refused with `JournalFencedError`, storing nothing; a later claim's write is
   * accepted. Atomic with those writes: of a fence and a write of the fenced claim, the write either stored
   * before or is refused. Idempotent; never lowers a fence. Not Items, not a journal turn: `readJournal` and
   * `journalledRuns` do not see it; it survives `discardJournal` and goes with the session (rename, delete).
   * Throws or rejects with `ConfigurationError` naming `runId` or `claim` (a whole number ≥ 1). Optional: a
   * peer that declares a queued run's worker lost uses it when the store has it.
   */
  fenceJournal?(runId: string, claim: number): MaybeAsync<void>;
  /**
   * The ids of the runs that have a journal (neither sealed nor discarded: their process stopped before
   * they ended, or they are running), the one journalled last at the end. Optional: how a program that
   * does not keep its run ids finds a run to continue (the `loopctl` command's `--continue`).
   */
  journalledRuns?(): MaybeAsync<readonly string[]>;
}

/**
 * What `journalTurn` and `journalResponse` are told: `signal`, aborted when the write should not begin (a run's
 * cancel); `claim`, the writer's claim of the run (a whole number ≥ 1: a queued run's claim token, 1 for its
 * first worker, 2 for the worker that continues it…), by which a store refuses the writes of a claim a later
 * one took the run over from (`JournalFencedError`). Absent: the write is not fenced.
 */
export interface JournalOptions {
  readonly signal?: AbortSignal;
  readonly claim?: number;
}

/** What `recordCallStart` is told: `claim`, the writer's claim of the run (see {@link JournalOptions}). */
export interface CallStartOptions {
  readonly claim?: number;
}

/** One journalled turn: its number (1 for the run's first) and the Items the run added in it. */
export interface JournalTurn {
  readonly turn: number;
  readonly items: readonly Item[];
}

/**
 * A run's journal as `readJournal` gives it (see {@link Session.readJournal}). `pending`: the journalled
 * model response (`journalResponse`) of a turn after every journalled one, the latest; absent when none.
 */
export interface RunJournal {
  readonly sealed: boolean;
  readonly turns: readonly JournalTurn[];
  readonly pending?: JournalTurn;
}

/** One stored session as {@link SessionStore.list} reports it; times are ms since the epoch. */
export interface SessionInfo {
  readonly id: string;
  /** How many Items the session holds. */
  readonly items: number;
  /** When its first append stored. */
  readonly createdAt: number;
  /** When its last append stored. */
  readonly updatedAt: number;
}

/**
 * Many sessions in one place (a SQLite file, a Postgres schema, memory), by id. A session exists
 * from its first append that stored (even of zero Items) until it is deleted.
 * - `session(id)`: the session named `id` (a handle: nothing is created until it stores). Throws
 *   `ConfigurationError` (field `id`) for an id that is not a non-empty string.
 * - `list()`: every session, the most recently updated first (ties by id).
 * - `delete(id)`: removes its Items and run ids; resolves false when there was no such session.
 *   Rejects with `ConcurrentRunError` while a run holds its lease, deleting nothing.
 * - `rename(from, to)`: moves the history and its run ids. Rejects with `SessionNotFoundError` when
 *   `from` does not exist, `SessionExistsError` when `to` does, `ConcurrentRunError` while either is
 *   leased; nothing moves then.
 * - `close()`: frees what the store opened (never a pool or database handle the caller passed in);
 *   idempotent.
 */
export interface SessionStore {
  session(id: string): Session;
  list(): Promise<readonly SessionInfo[]>;
  delete(id: string): Promise<boolean>;
  rename(from: string, to: string): Promise<void>;
  close(): Promise<void>;
}
