import { Observable, type MonoTypeOperatorFunction, type SchedulerAction, type SchedulerLike, type Subscription } from 'rxjs';
import { TimeoutError } from '../errors.js';
import type { Deadlines } from './types.js';

/**
 * Model-request deadlines (docs/recovery.md; checkpoint 2: model request,
 * checkpoint 3: model stream), on the run's scheduler:
 * - `requestMs`: the whole request (streamed or not);
 * - streamed requests only: `firstEventMs` until the first event (`idleMs`
 *   stands in when it is absent) and `idleMs` between two events.
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
export function modelDeadlines<T>(deadlines: Deadlines | undefined, scheduler: SchedulerLike, stream: boolean): MonoTypeOperatorFunction<T> {
  const { requestMs } = deadlines ?? {};
  const firstEventMs = stream ? deadlines?.firstEventMs : undefined;
  const idleMs = stream ? deadlines?.idleMs : undefined;
  if (firstEventMs === undefined && idleMs === undefined && requestMs === undefined) return (source) => source;
  return (source) =>
    new Observable<T>((subscriber) => {
      let seen = false;
      let lastAt = scheduler.now();
      let silence: Subscription | undefined;
      let dueAt = Infinity;
      const limit = (): number | undefined => (seen ? idleMs : firstEventMs ?? idleMs);
      function check(this: SchedulerAction<unknown>): void {
        const ms = limit();
        if (ms === undefined) return;
        const quiet = scheduler.now() - lastAt;
        if (quiet >= ms) subscriber.error(new TimeoutError(seen || firstEventMs === undefined ? 'idle' : 'first_event', ms));
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
