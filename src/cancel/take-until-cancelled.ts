import {
  Observable,
  Subscription,
  from,
  type MonoTypeOperatorFunction,
  type Observer,
  type ObservableInput,
  type OperatorFunction,
  type Subscriber,
} from 'rxjs';
import type { CancelSignal } from './cancel-signal.js';

/**
 * The source-side subscriber: a Subscription that is also an Observer, so rxjs uses it
 * as the subscriber itself (sync sources see `closed` and stop at once) and we can tear
 * the source down *before* telling the destination (guarantee 11: cleanup starts inner to outer).
 */
class Gate<T> extends Subscription implements Observer<T> {
  constructor(private readonly destination: Subscriber<T>) {
    super();
  }
  next(value: T): void {
    if (!this.closed) this.destination.next(value);
  }
  error(err: unknown): void {
    if (this.closed) return;
    this.unsubscribe();
    this.destination.error(err);
  }
  complete(): void {
    if (this.closed) return;
    this.unsubscribe();
    this.destination.complete();
  }
}

function gated<T, R>(
  source: Observable<T>,
  cancel: CancelSignal,
  replacement: ((reason: unknown) => ObservableInput<R>) | null,
): Observable<T | R> {
  return new Observable<T | R>((subscriber) => {
    const switchTo = (reason: unknown): void => {
      if (replacement === null) {
        subscriber.complete();
        return;
      }
      let input: ObservableInput<R>;
      try {
        input = replacement(reason);
      } catch (err) {
        subscriber.error(err);
        return;
      }
      from(input).subscribe(subscriber);
    };
    if (cancel.isCancelled) {
      switchTo(cancel.reason);
      return;
    }
    const gate = new Gate<T | R>(subscriber);
    subscriber.add(
      cancel.onCancel((reason) => {
        gate.unsubscribe();
        switchTo(reason);
      }),
    );
    subscriber.add(gate);
    source.subscribe(gate);
  });
}

/**
 * Biased `takeUntil` on a {@link CancelSignal} (docs/cancellation.md). Mirrors the source
 * until the token current at subscribe time fires, then unsubscribes the source and
 * completes (source torn down first). If already cancelled at subscribe, the source is
 * never subscribed and the result completes synchronously. The listener is registered
 * *before* the source is subscribed and removed on every teardown. Source errors pass.
 *
 * Ties: a value the source delivers before the cancel runs is delivered (takeUntil
 * semantics); use {@link stage} to make a same-tick cancel win before a stage starts.
 */
export function takeUntilCancelled<T>(cancel: CancelSignal): MonoTypeOperatorFunction<T> {
  return (source) => gated<T, never>(source, cancel, null);
}

/**
 * Like {@link takeUntilCancelled}, but on cancel switches to `onCancel(reason)`
 * instead of completing (e.g. to emit a terminal event). If already cancelled at
 * subscribe, the source is never subscribed and the replacement starts at once.
 * A throwing `onCancel` errors the result.
 */
export function untilCancelled<T, R>(
  cancel: CancelSignal,
  onCancel: (reason: unknown) => ObservableInput<R>,
): OperatorFunction<T, T | R> {
  return (source) => gated<T, R>(source, cancel, onCancel);
}
