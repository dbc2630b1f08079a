import {
  Observable,
  type MonoTypeOperatorFunction,
  type SchedulerAction,
  type SchedulerLike,
  type Subscription,
} from 'rxjs';
import { DEFAULTS } from '../defaults.js';
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
  return (source) =>
    new Observable<T>((subscriber) => {
      let seen = false;
      let lastAt = scheduler.now();
      let silence: Subscription | undefined;
      let dueAt = Infinity;
      const limit = (): number | undefined => (seen ? idleMs : beforeFirst);
      function check(this: SchedulerAction<unknown>): void {
        const ms = limit();
        if (ms === undefined) return;
        const quiet = scheduler.now() - lastAt;
        if (quiet >= ms)
          subscriber.error(new TimeoutError(seen || firstEventMs === undefined ? 'idle' : 'first_event', ms));
        else {
          dueAt = scheduler.now() + ms - quiet;
          this.schedule(undefined, ms - quiet);
        }
      }
      const arm = (ms: number): void => {
        silence?.unsubscribe();
        dueAt = scheduler.now() + ms;
        subscriber.add((silence = scheduler.schedule(check, ms)));
      };
      const first = limit();
      if (first !== undefined) arm(first);
      if (requestMs !== undefined) {
        subscriber.add(scheduler.schedule(() => subscriber.error(new TimeoutError('request', requestMs)), requestMs));
      }
      subscriber.add(
        source.subscribe({
          next: (value) => {
            lastAt = scheduler.now();
            if (!seen) {
              seen = true;
              if (idleMs === undefined) silence?.unsubscribe();
              else if (dueAt > lastAt + idleMs) arm(idleMs);
            }
            subscriber.next(value);
          },
          error: (err) => subscriber.error(err),
          complete: () => subscriber.complete(),
        }),
      );
    });
}
