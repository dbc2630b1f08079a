import { Observable, type MonoTypeOperatorFunction, type SchedulerAction, type SchedulerLike } from 'rxjs';
import { TimeoutError } from '../errors.js';
import type { Deadlines } from './types.js';

/**
 * Model-request deadlines (DESIGN.md §6, §4 rows 2 and 3): `firstEventMs`
 * until the first event, `idleMs` between events, `requestMs` for the whole
 * request. Each expiry errors with a {@link TimeoutError} (retryable, never a
 * cancel) and unsubscribes the source. The idle deadline costs one timer and
 * a last-event timestamp, not a timer per chunk: when the timer fires early
 * it re-arms itself for the time left.
 */
export function modelDeadlines<T>(deadlines: Deadlines | undefined, scheduler: SchedulerLike): MonoTypeOperatorFunction<T> {
  const { firstEventMs, idleMs, requestMs } = deadlines ?? {};
  if (firstEventMs === undefined && idleMs === undefined && requestMs === undefined) return (source) => source;
  return (source) =>
    new Observable<T>((subscriber) => {
      let seen = false;
      let lastAt = scheduler.now();
      const fail = (kind: 'first_event' | 'idle' | 'request', ms: number): void => subscriber.error(new TimeoutError(kind, ms));
      const silenceLimit = (): number | undefined => (seen ? idleMs : firstEventMs ?? idleMs);
      const first = silenceLimit();
      if (first !== undefined) {
        subscriber.add(
          scheduler.schedule(function (this: SchedulerAction<unknown>) {
            const limit = silenceLimit();
            if (limit === undefined) return;
            const quiet = scheduler.now() - lastAt;
            if (quiet >= limit) fail(seen ? 'idle' : firstEventMs !== undefined ? 'first_event' : 'idle', limit);
            else this.schedule(undefined, limit - quiet);
          }, first),
        );
      }
      if (requestMs !== undefined) subscriber.add(scheduler.schedule(() => fail('request', requestMs), requestMs));
      subscriber.add(
        source.subscribe({
          next: (value) => {
            seen = true;
            lastAt = scheduler.now();
            subscriber.next(value);
          },
          error: (err) => subscriber.error(err),
          complete: () => subscriber.complete(),
        }),
      );
    });
}
