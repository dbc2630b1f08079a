import { Observable } from 'rxjs';
import type { Item } from '../items.js';
import { toLastValue } from '../last-value.js';
import type { Session } from '../session/session.js';
import { SessionFailure } from './session-failure.js';

/** A session that keeps a run journal: the three optional methods, together (docs/sessions.md, "The run journal"). */
export type JournalSession = Session & Required<Pick<Session, 'journalTurn' | 'readJournal' | 'discardJournal'>>;

/** True when `session` has `journalTurn`, `readJournal` and `discardJournal` (a throwing getter: no). */
export function hasJournal(session: Session | undefined): session is JournalSession {
  if (session === undefined) return false;
  try {
    return (
      typeof session.journalTurn === 'function' &&
      typeof session.readJournal === 'function' &&
      typeof session.discardJournal === 'function'
    );
  } catch {
    return false;
  }
}

/**
 * A run's side of its session's journal (docs/sessions.md, "Durable runs"). At each turn's entry after
 * the run's first, the previous turn is journalled: the Items the run added since the last journalled
 * turn, under `(runId, turn)`. A run that does not complete discards its journal once the write in
 * flight (if any) has settled, so a late write cannot outlive the discard. Without a journalling
 * session it does nothing.
 */
export class RunJournalWriter {
  readonly #session: JournalSession | undefined;
  /** How many of the run's Items are journalled (a continued run starts with its journalled Items). */
  #journalled: number;
  /** The writes in flight, settled or not: a discard waits for them. */
  #inFlight = 0;
  #pending: Promise<unknown> = Promise.resolve();
  /** Whether the run holds its journal (it got past its lease): only then is the journal its to discard. */
  #claimed = false;

  /**
   * `base`: the last turn journalled before this run started (0, or the turn a continued run goes on
   * from); `journalled`: how many of the run's Items that journal holds.
   */
  constructor(
    session: Session | undefined,
    readonly base = 0,
    journalled = 0,
  ) {
    this.#session = hasJournal(session) ? session : undefined;
    this.#journalled = journalled;
  }

  /** Whether turn `n`'s entry journals turn `n - 1`: a turn this run completed, with a journalling session. */
  journalsBefore(n: number): boolean {
    return this.#session !== undefined && n - 1 > this.base;
  }

  /** True when the run's session keeps a journal. */
  get active(): boolean {
    return this.#session !== undefined;
  }

  /**
   * Journals `turn` (its Items: `items` from the last journalled one on) and completes when it stored.
   * Unsubscribed (a cancel), the write's signal aborts: one not begun is not begun, one begun finishes
   * and is waited for by a discard. A failure errors with a `SessionFailure` (`session_error`).
   */
  write$(runId: string, turn: number, items: readonly Item[]): Observable<never> {
    return this.#write$(runId, turn, items, false);
  }

  /** True when the session journals a turn's model response before its tools run (`journalResponse`). */
  get journalsResponses(): boolean {
    return typeof this.#session?.journalResponse === 'function';
  }

  /**
   * Journals the model response of `turn` before its tools run (docs/sessions.md, "No tool runs twice"):
   * `items` from the last journalled turn on, up to the response's Item. As `write$`, but the turn stays
   * unjournalled: its completed entry is written at the next turn's entry, as always. Without
   * `journalResponse` in the session it completes at once.
   */
  response$(runId: string, turn: number, items: readonly Item[]): Observable<never> {
    return this.#write$(runId, turn, items, true);
  }

  #write$(runId: string, turn: number, items: readonly Item[], response: boolean): Observable<never> {
    const session = this.#session;
    return new Observable<never>((subscriber) => {
      if (session === undefined || (response && session.journalResponse === undefined)) return subscriber.complete();
      const controller = new AbortController();
      const from = this.#journalled;
      const options = { signal: controller.signal };
      let written: Observable<unknown>;
      try {
        const part = items.slice(from);
        written = toLastValue(
          response
            ? session.journalResponse!(runId, turn, part, options)
            : session.journalTurn(runId, turn, part, options),
        );
      } catch (error) {
        subscriber.error(new SessionFailure('session_error', error));
        return;
      }
      let resolveDone!: () => void;
      const done = new Promise<void>((resolve) => (resolveDone = resolve));
      const settled = (): void => {
        this.#inFlight--;
        resolveDone();
      };
      this.#inFlight++;
      this.#pending = Promise.all([this.#pending, done]);
      // Not unsubscribed with the run: a write that has begun finishes, and a discard waits for it.
      written.subscribe({
        error: (error: unknown) => {
          settled();
          subscriber.error(new SessionFailure('session_error', error));
        },
        complete: () => {
          settled();
          if (!response) this.#journalled = items.length;
          subscriber.complete();
        },
      });
      return () => controller.abort(new Error('the run ended during its journal write'));
    });
  }

  /**
   * The run got past its session's lease (or the session has none) and loads its history: from now on
   * its journal is its own to discard. A run refused before (the lease held by a live run, another run
   * using the session in this process, a cancel at its start) leaves the journal under its run id alone:
   * a `resumeRun` refused so must not discard the live run's journal.
   */
  claim(): void {
    this.#claimed = true;
  }

  /**
   * Discards the run's journal (a run that did not complete) once a write in flight has settled; never
   * throws. Nothing when the run never claimed it (see `claim`).
   */
  discard(runId: string): void {
    const session = this.#session;
    if (session === undefined || !this.#claimed) return;
    // The journal of a run that never completes is never continued: a failed discard only leaves it taking room.
    const discard = (): Promise<void> => {
      try {
        return toPromise(toLastValue(session.discardJournal(runId)));
      } catch {
        return Promise.resolve();
      }
    };
    // Nothing in flight: at once (a synchronous store discards before the terminal event).
    this.#pending = this.#inFlight === 0 ? discard() : this.#pending.then(discard);
  }

  /** Settles when every write and discard so far has (tests, and the CLI before it exits). */
  settled(): Promise<void> {
    return this.#pending.then(() => undefined);
  }
}

function toPromise(value$: Observable<unknown>): Promise<void> {
  return new Promise<void>((resolve) => value$.subscribe({ error: () => resolve(), complete: () => resolve() }));
}
