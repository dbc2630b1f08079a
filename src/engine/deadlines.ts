import {
  Observable,
  Subscriber,
  type MonoTypeOperatorFunction,
  type SchedulerAction,
  type SchedulerLike,
  type Subscription,
} from 'rxjs';
import { DEFAULTS } from '../defaults.js';
import { Relay } from './relay.js';
import { TimeoutError } from '../errors.js';
import type { Deadlines } from './types.js';

/** A deadline the caller gave (`number | false | undefined`) with its default: a number of ms, or undefined for off. */
function withDefault(value: number | false | undefined, fallback: number | undefined): number | undefined {
  return value === false ? undefined : (value ?? fallback);
}

/**
 * The model deadlines one attempt runs under, defaults from `DEFAULTS.deadlines` filled in and
 * `false` turned into off (docs/recovery.md, "Deadlines"): a streamed attempt gets `firstEventMs`
 * and `idleMs`; `requestMs` bounds a non-streamed attempt (and the rescue) by default, and a
 * streamed one only when the caller set it. A caller who set `idleMs` and left `firstEventMs` out
 * keeps their `idleMs` as the limit before the first event too (undefined here: the operator's
 * stand-in), as before there were defaults.
 */
export function attemptDeadlines(
  deadlines: Deadlines | undefined,
  stream: boolean,
): {
  readonly firstEventMs: number | false | undefined;
  readonly idleMs: number | undefined;
  readonly requestMs: number | undefined;
} {
  const d = DEFAULTS.deadlines;
  const requestMs = withDefault(deadlines?.requestMs, stream ? undefined : d.requestMs);
  if (!stream) return { firstEventMs: false, idleMs: undefined, requestMs };
  const idleMs = withDefault(deadlines?.idleMs, d.idleMs);
  const idleStandsIn = deadlines?.firstEventMs === undefined && typeof deadlines?.idleMs === 'number';
  const firstEventMs = idleStandsIn ? undefined : (withDefault(deadlines?.firstEventMs, d.firstEventMs) ?? false);
  return { firstEventMs, idleMs, requestMs };
}

/** A deadline that has no default (`toolMs`, `runMs`): its ms, or undefined when absent or `false`. */
export function optionalDeadline(value: number | false | undefined): number | undefined {
  return withDefault(value, undefined);
}

/** The approval deadline (`approvalMs`, default `DEFAULTS.deadlines.approvalMs`): its ms, or undefined for `false`. */
export function approvalDeadline(deadlines: Deadlines | undefined): number | undefined {
  return withDefault(deadlines?.approvalMs, DEFAULTS.deadlines.approvalMs);
}

/** The commit deadline (`commitMs`, default `DEFAULTS.deadlines.commitMs`): its ms, or undefined for `false`. */
export function commitDeadline(deadlines: Deadlines | undefined): number | undefined {
  return withDefault(deadlines?.commitMs, DEFAULTS.deadlines.commitMs);
}

/**
 * Model-request deadlines (docs/recovery.md; checkpoint 2: model request,
 * checkpoint 3: model stream), on the run's scheduler:
 * - `requestMs`: the whole request (streamed or not);
 * - streamed requests only: `firstEventMs` until the first event (`idleMs`
 *   stands in when it is absent; `false` means no limit before the first
 *   event) and `idleMs` between two events.
 * The values are used as given (absent = off); the engine passes
 * {@link attemptDeadlines}, which fills in the defaults.
 *
 * A non-streaming request (checkpoint 2, and checkpoint 5: rescue) has only the
 * whole-request deadline: its one event is the whole answer, so time-to-first
 * event and silence limits meant for a stream do not apply to it.
 *
 * Each expiry errors with a {@link TimeoutError} (kind `first_event`, `idle`
 * or `request`: retryable, never a cancel) and unsubscribes the source.
 *
 * One idle timer: the silence deadline costs one scheduled action and a last-event
 * timestamp, never a timer per chunk: an event only stores `now()`; when the
 * action fires early it re-arms itself for the time left. The first event
 * re-arms it once, when the idle limit ends before the pending first-event
 * timer would fire.
 */
export function modelDeadlines<T>(
  deadlines: Deadlines | undefined,
  scheduler: SchedulerLike,
  stream: boolean,
): MonoTypeOperatorFunction<T> {
  const requestMs = optionalDeadline(deadlines?.requestMs);
  const firstEventMs = stream ? deadlines?.firstEventMs : undefined;
  const idleMs = stream ? optionalDeadline(deadlines?.idleMs) : undefined;
  const beforeFirst = firstEventMs === false ? undefined : (firstEventMs ?? idleMs); // the limit until the first event
  if (beforeFirst === undefined && idleMs === undefined && requestMs === undefined) return (source) => source;
  const limits: Limits = { firstEventMs, idleMs, beforeFirst };
  return (source) =>
    new Observable<T>((subscriber) => {
      const d = new Deadline<T>(subscriber, scheduler, limits);
      const first = d.limit();
      if (first !== undefined) d.arm(first);
      if (requestMs !== undefined) subscriber.add(scheduler.schedule(requestExpired, requestMs, { d, requestMs }));
      subscriber.add(d);
      source.subscribe(d);
    });
}

/** The limits of a stream's silence: `beforeFirst` until the first event, `idleMs` after it. */
interface Limits {
  readonly firstEventMs: number | false | undefined;
  readonly idleMs: number | undefined;
  readonly beforeFirst: number | undefined;
}

/**
 * The source's subscriber of {@link modelDeadlines}: the last event's time and the one silence timer, in one
 * object (the timers' work functions are shared, their state this subscriber).
 */
class Deadline<T> extends Relay<T> {
  seen = false;
  lastAt: number;
  dueAt = Infinity;
  #silence: Subscription | undefined;

  constructor(
    out: Subscriber<T>,
    readonly scheduler: SchedulerLike,
    readonly limits: Limits,
  ) {
    super(out);
    this.lastAt = scheduler.now();
  }

  limit(): number | undefined {
    return this.seen ? this.limits.idleMs : this.limits.beforeFirst;
  }

  arm(ms: number): void {
    this.#silence?.unsubscribe();
    this.dueAt = this.scheduler.now() + ms;
    this.out.add((this.#silence = this.scheduler.schedule(checkSilence, ms, this as Deadline<unknown>)));
  }

  protected override _next(value: T): void {
    this.lastAt = this.scheduler.now();
    if (!this.seen) {
      this.seen = true;
      const { idleMs } = this.limits;
      if (idleMs === undefined) this.#silence?.unsubscribe();
      else if (this.dueAt > this.lastAt + idleMs) this.arm(idleMs);
    }
    this.out.next(value);
  }
}

/** The silence timer: errors when the stream was quiet for its limit, else re-arms itself for the time left. */
function checkSilence(this: SchedulerAction<Deadline<unknown>>, d?: Deadline<unknown>): void {
  if (d === undefined) return;
  const ms = d.limit();
  if (ms === undefined) return;
  const { scheduler } = d;
  const quiet = scheduler.now() - d.lastAt;
  if (quiet >= ms) {
    const kind = d.seen || d.limits.firstEventMs === undefined ? 'idle' : 'first_event';
    d.out.error(new TimeoutError(kind, ms));
  } else {
    d.dueAt = scheduler.now() + ms - quiet;
    this.schedule(d, ms - quiet);
  }
}

/** The whole-request timer. */
function requestExpired(state?: { readonly d: Deadline<unknown>; readonly requestMs: number }): void {
  if (state !== undefined) state.d.out.error(new TimeoutError('request', state.requestMs));
}
