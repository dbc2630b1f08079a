import { Subscriber } from 'rxjs';

/**
 * A hand-written inner subscriber's common ends (the shape of RxJS's `OperatorSubscriber` without its callbacks):
 * an error or a completion goes on to `out`, then this subscriber tears down; `_next` is each subclass's own. One
 * object per live step (BENCHMARKS.md, section 6.1); a subclass overrides an end that does more.
 */
export abstract class Relay<T, R = T> extends Subscriber<T> {
  /** @param out where the ends (and, in a subclass, the values) go. */
  constructor(readonly out: Subscriber<R>) {
    super();
  }

  protected override _error(err: unknown): void {
    try {
      this.out.error(err);
    } finally {
      this.unsubscribe();
    }
  }

  protected override _complete(): void {
    try {
      this.out.complete();
    } finally {
      this.unsubscribe();
    }
  }
}
