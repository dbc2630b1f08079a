import type { Item } from '../items.js';
import {
  alreadyResumed,
  appendRunId,
  callStartKey,
  callStartPrefix,
  checkClaim,
  checkFenceJournal,
  checkId,
  fenceKey,
  checkItems,
  checkJournalTurn,
  journalOf,
  checkTtl,
  suspensionKey,
} from './checks.js';
import { JournalFencedError } from './errors.js';
import { LeaseSlot } from './memory-lease.js';
import type {
  AppendOptions,
  CallStartOptions,
  JournalOptions,
  Lease,
  LeaseOptions,
  RunJournal,
  Session,
} from './session.js';

/** Options of a {@link MemorySession}: `now`, the clock of its leases and times (ms; default `Date.now`). */
export interface MemorySessionOptions {
  readonly now?: () => number;
}

/** @internal What a `MemorySessionStore` moves on rename. */
export interface MemoryState {
  items: readonly Item[];
  stored: Set<string>;
  /** The run journals (docs/sessions.md, "The run journal"): by run id, each turn's Items by turn. */
  journals: Map<string, Map<number, readonly Item[]>>;
  /** Each claimed journal's fence: the lowest claim its writes are accepted from (`Session.fenceJournal`). */
  claims: Map<string, number>;
  createdAt: number | undefined;
  updatedAt: number | undefined;
}

/** @internal The state of `session` (for `MemorySessionStore`). */
export let memoryState: (session: MemorySession) => MemoryAccess;

/** @internal */
export interface MemoryAccess {
  state: MemoryState;
  readonly lease: LeaseSlot;
  readonly now: () => number;
  name: string;
}

/**
 * An in-memory {@link Session}: `load()` returns the stored (frozen) array, `append()` adds
 * atomically (one array swap) and is idempotent per `runId`: an append whose
 * `runId` was stored before stores nothing ("a late write is harmless").
 * `writes` counts `append` calls (stored or not), so a test can assert that a
 * completed run wrote exactly once. `acquire` leases it to one run at a time, in this process.
 *
 * @example
 * const session = new MemorySession();
 * await lastValueFrom(run(agent, 'hi', { session }));
 * session.items; // [user, assistant]
 */
export class MemorySession implements Session {
  #state: MemoryState;
  #writes = 0;
  readonly #now: () => number;
  readonly #lease: LeaseSlot;

  #name = 'the session';

  static {
    memoryState = (s) => ({
      get state() {
        return s.#state;
      },
      set state(v: MemoryState) {
        s.#state = v;
      },
      lease: s.#lease,
      now: s.#now,
      get name() {
        return s.#name;
      },
      set name(v: string) {
        s.#name = v;
      },
    });
  }

  /** `initial` is taken as it is (not checked): a test may start from any history. */
  constructor(initial: readonly Item[] = [], options: MemorySessionOptions = {}) {
    this.#now = options.now ?? Date.now;
    this.#state = {
      items: Object.freeze([...initial]),
      stored: new Set(),
      journals: new Map(),
      claims: new Map(),
      createdAt: undefined,
      updatedAt: undefined,
    };
    this.#lease = new LeaseSlot(this.#now, () => this.#name);
  }

  /** The stored history (frozen). */
  get items(): readonly Item[] {
    return this.#state.items;
  }

  /** How many times `append` has been called. */
  get writes(): number {
    return this.#writes;
  }

  load(): readonly Item[] {
    return this.#state.items;
  }

  /**
   * Adds `items` at the end, unless `options.runId` was stored already. Synchronous: `signal` is not
   * needed. Throws `ResumeError` (`already_resumed`) for a second commit of one `options.suspensionId`.
   * Throws `ConfigurationError` naming the field (`items[2].text`, `options.runId`) for
   * anything that is not an Item or a run id, storing nothing.
   */
  append(items: readonly Item[], options?: AppendOptions): void {
    this.#writes++;
    checkItems(items);
    const runId = appendRunId(options);
    const suspension = suspensionKey(options);
    const state = this.#state;
    if (runId !== undefined && state.stored.has(runId)) return;
    if (suspension !== undefined && state.stored.has(suspension)) throw alreadyResumed(options);
    if (runId !== undefined) state.stored.add(runId);
    if (runId !== undefined) dropJournal(state, runId); // the commit seals the run's journal
    if (suspension !== undefined) state.stored.add(suspension);
    state.items = Object.freeze([...state.items, ...items]);
    state.updatedAt = this.#now();
    state.createdAt ??= state.updatedAt;
  }

  /**
   * Records the start of a resumed call (see `Session.recordCallStart`): `true` when this record
   * stored, `false` when `(suspensionId, callId)` was recorded before. Synchronous, so a run in virtual
   * time records and starts its call in one step. Throws `ConfigurationError` for a bad id or claim, and
   * `JournalFencedError` for a claim the run's journal fence refuses (see `Session.recordCallStart`).
   */
  recordCallStart(suspensionId: string, callId: string, options?: CallStartOptions): boolean {
    const key = callStartKey(suspensionId, callId);
    const claim = checkClaim(options?.claim);
    const { stored, claims } = this.#state;
    const fence = claims.get(suspensionId) ?? 0;
    if (claim !== undefined && claim < fence) throw new JournalFencedError(suspensionId, claim, fence);
    if (stored.has(key)) return false;
    stored.add(key);
    return true;
  }

  /**
   * Fences off the commit of `runId` (see `Session.fenceRun`): `'committed'` when an append of it stored
   * first, else `'fenced'` (a later append of it stores nothing). Synchronous. Throws `ConfigurationError`
   * naming `runId` for a bad id.
   */
  fenceRun(runId: string): 'committed' | 'fenced' {
    checkId(runId, 'runId');
    const { stored } = this.#state;
    const mark = fenceKey(runId);
    if (stored.has(runId)) return stored.has(mark) ? 'fenced' : 'committed';
    stored.add(runId);
    stored.add(mark);
    return 'fenced';
  }

  /**
   * Journals a completed turn (see `Session.journalTurn`), synchronously: nothing when `(runId, turn)`
   * is journalled already or the run's commit is stored. Throws `ConfigurationError` for bad arguments,
   * or the signal's reason when it has fired, storing nothing.
   */
  journalTurn(runId: string, turn: number, items: readonly Item[], options?: JournalOptions): void {
    this.#journal(runId, turn, turn, items, options);
  }

  /**
   * Journals a turn's model response before its tools run (see `Session.journalResponse`), synchronously;
   * kept under turn `-turn` beside the completed turns. Errors as `journalTurn`.
   */
  journalResponse(runId: string, turn: number, items: readonly Item[], options?: JournalOptions): void {
    this.#journal(runId, turn, -turn, items, options);
  }

  #journal(runId: string, turn: number, key: number, items: readonly Item[], options?: JournalOptions): void {
    checkJournalTurn(runId, turn, items);
    const claim = checkClaim(options?.claim);
    if (options?.signal?.aborted) throw options.signal.reason;
    const { journals, stored, claims } = this.#state;
    if (stored.has(runId)) return;
    if (claim !== undefined) {
      const fence = claims.get(runId) ?? 0;
      if (claim < fence) throw new JournalFencedError(runId, claim, fence);
      claims.set(runId, claim);
    }
    let journal = journals.get(runId);
    if (journal === undefined) journals.set(runId, (journal = new Map()));
    if (!journal.has(key)) journal.set(key, Object.freeze([...items]));
    journals.delete(runId); // Map order: the run journalled last goes to the end
    journals.set(runId, journal);
  }

  /** The journal of `runId` (see `Session.readJournal`), its turns in turn order. */
  readJournal(runId: string): RunJournal {
    checkId(runId, 'runId');
    const { journals, stored } = this.#state;
    const journal = journals.get(runId);
    return journalOf(stored.has(runId), journal ? [...journal].map(([turn, items]) => ({ turn, items })) : []);
  }

  /** Removes the journal of `runId` and the call starts recorded under it; idempotent. Its claim fence stays. */
  discardJournal(runId: string): void {
    checkId(runId, 'runId');
    dropJournal(this.#state, runId);
  }

  /**
   * Fences off the journal writes of `runId`'s claim `claim` and earlier (see `Session.fenceJournal`),
   * synchronously. Throws `ConfigurationError` naming `runId` or `claim`.
   */
  fenceJournal(runId: string, claim: number): void {
    checkFenceJournal(runId, claim);
    const { claims } = this.#state;
    claims.set(runId, Math.max(claims.get(runId) ?? 0, claim + 1));
  }

  /** The runs with a journal, the one journalled last at the end. */
  journalledRuns(): readonly string[] {
    return [...this.#state.journals].filter(([, turns]) => turns.size > 0).map(([runId]) => runId);
  }

  /**
   * Leases the session to `runId` for `options.ttlMs` ms (see {@link Lease}), in this process only.
   * Synchronous (a run in virtual time takes it without a microtask): throws `ConcurrentRunError`
   * while another run holds a live lease, and `ConfigurationError` for a bad `runId` or `ttlMs`.
   */
  acquire(runId: string, options: LeaseOptions): Lease {
    checkId(runId, 'runId');
    return this.#lease.acquire(runId, checkTtl(options));
  }
}

/** Removes the journal of `runId` and the call starts recorded under its id (not its claim fence). */
function dropJournal(state: MemoryState, runId: string): void {
  state.journals.delete(runId);
  const prefix = callStartPrefix(runId);
  for (const key of state.stored) if (key.startsWith(prefix)) state.stored.delete(key);
}
