import { Observable, asyncScheduler, type SchedulerLike } from 'rxjs';
import type { CancelSignal } from './cancel-signal.js';

/**
 * `timer(dueMs, scheduler)` that gives up on cancel (a cancel-aware wait; the engine uses it for the run deadline).
 * Emits `0` after `dueMs` milliseconds (negative or NaN = 0) on `scheduler` (default
 * `asyncScheduler`), then completes. When the token current at subscribe time fires
 * first, it completes without emitting and its scheduled action is removed; if it is
 * already fired at subscribe, nothing is scheduled and it completes synchronously.
 * Never errors.
 */
export function cancellableTimer(
  dueMs: number,
  cancel: CancelSignal,
  scheduler: SchedulerLike = asyncScheduler,
): Observable<0> {
  return new Observable<0>((subscriber) => {
    if (cancel.isCancelled) {
      subscriber.complete();
      return;
    }
    const remove = cancel.onCancel(() => subscriber.complete());
    subscriber.add(remove);
    subscriber.add(
      scheduler.schedule(
        () => {
          remove();
          subscriber.next(0);
          subscriber.complete();
        },
        dueMs > 0 ? dueMs : 0,
      ),
    );
  });
}
