import {
  Observable,
  asapScheduler,
  from,
  type MonoTypeOperatorFunction,
  type ObservableInput,
  type SchedulerAction,
  type SchedulerLike,
} from 'rxjs';
import { cancelMark, type CancelSignal } from './cancel-signal.js';

/**
 * Starts a stage so that "cancel wins at a stage start": one asapScheduler hop, then a poll.
 *
 * On subscribe, schedules one action (delay 0) on `scheduler` (default `asapScheduler`).
 * In it, if a cancel was raised since subscribe (on the token current then, even if the
 * signal was reset since), it completes and `start` is never called; otherwise it
 * subscribes `from(start())` and mirrors it (values, error, completion). A cancel raised
 * in the same tick (TestScheduler: the same frame) as the event that led to the stage
 * therefore wins whichever ran first. If already cancelled at subscribe, it completes
 * synchronously without scheduling. Unsubscribing before the hop removes the action.
 * A throwing `start` errors the result. Cancels after the start are not watched: compose
 * with `takeUntilCancelled` for that.
 */
export function stage<T>(
  cancel: CancelSignal,
  start: () => ObservableInput<T>,
  scheduler: SchedulerLike = asapScheduler,
): Observable<T> {
  return new Observable<T>((subscriber) => {
    const mark = cancelMark(cancel);
    if (mark.fired) {
      subscriber.complete();
      return;
    }
    subscriber.add(
      scheduler.schedule(function (this: SchedulerAction<unknown>) {
        // Done once it ran: the subscriber keeps neither the action nor this closure while the stage's work runs.
        subscriber.remove(this);
        if (mark.fired) {
          subscriber.complete();
          return;
        }
        let input: ObservableInput<T>;
        try {
          input = start();
        } catch (err) {
          subscriber.error(err);
          return;
        }
        from(input).subscribe(subscriber);
      }, 0),
    );
  });
}

/** Operator form of {@link stage}: the source is subscribed one hop later, unless cancelled. */
export function hopThenPoll<T>(
  cancel: CancelSignal,
  scheduler: SchedulerLike = asapScheduler,
): MonoTypeOperatorFunction<T> {
  return (source) => stage(cancel, () => source, scheduler);
}
