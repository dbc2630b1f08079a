import { Observable, Subscriber, from, type ObservableInput, type Unsubscribable } from 'rxjs';

/**
 * The run loop's operators, hand-written as those of sequence.ts are (BENCHMARKS.md, section 6.1): the turn loop's
 * `expand` and its failure catches, one subscriber object each, with RxJS's order of effects
 * (test/sequence-order-of-effects.test.ts) except where {@link expandOn} says.
 */

/**
 * `first$.pipe(expand((v) => (v === again ? next(arg) : EMPTY)), filter((v) => v !== again))`: emits the values
 * other than `again`; on `again`, subscribes `next(arg)` at once, as `expand` does (while the inner that gave it
 * still runs), and expands its values the same way. Completes when `first$` and every inner completed. `arg` lets a
 * shared function serve as `next` (no closure kept alive per subscription).
 *
 * One order differs from `expand`'s: when the last live inner completes asynchronously, it is torn down before the
 * result completes (RxJS's `expand` completes the result first, then tears the inner down). The run loop ends on the
 * outcome value emitted before either, so no run event moves.
 */
export function expandOn<T, A, X = undefined>(
  first$: Observable<T | A>,
  again: A,
  next: (arg: X) => Observable<T | A>,
  arg?: X,
): Observable<T> {
  return new Observable<T>((out) => {
    const loop = new Expand(out, again, next, arg as X);
    out.add(loop);
    loop.subscribe(first$);
  });
}

/** The state of one subscription to {@link expandOn}: the live inners (one, two while a turn hands over). */
class Expand<T, A, X> implements Unsubscribable {
  readonly #live: ExpandStep<T, A, X>[] = [];

  constructor(
    readonly out: Subscriber<T>,
    private readonly again: A,
    private readonly next: (arg: X) => Observable<T | A>,
    private readonly arg: X,
  ) {}

  subscribe(source: Observable<T | A>): void {
    const step = new ExpandStep(this);
    this.#live.push(step);
    source.subscribe(step);
  }

  value(value: T | A): void {
    const { out } = this;
    if (out.closed) return;
    if (value !== this.again) return out.next(value as T);
    let next$: Observable<T | A>;
    try {
      next$ = this.next(this.arg);
    } catch (err) {
      return out.error(err);
    }
    this.subscribe(next$);
  }

  done(step: ExpandStep<T, A, X>): void {
    const live = this.#live;
    const i = live.indexOf(step);
    if (i !== -1) live.splice(i, 1);
    if (live.length === 0 && !this.out.closed) this.out.complete();
  }

  unsubscribe(): void {
    for (const step of this.#live.splice(0)) step.unsubscribe();
  }
}

/** One inner of an {@link expandOn}. */
class ExpandStep<T, A, X> extends Subscriber<T | A> {
  constructor(private readonly loop: Expand<T, A, X>) {
    super();
  }

  protected override _next(value: T | A): void {
    try {
      this.loop.value(value);
    } catch (err) {
      this.loop.out.error(err);
    }
  }

  protected override _error(err: unknown): void {
    try {
      this.loop.out.error(err);
    } finally {
      this.unsubscribe();
    }
  }

  protected override _complete(): void {
    this.unsubscribe();
    this.loop.done(this);
  }
}

/**
 * `source.pipe(catchError((err) => of(handle(err, arg))))`: on the source's error, `handle` makes the value, the
 * source is torn down, then the value is emitted and the result completes. A throwing `handle` errors the result.
 * `arg` lets a shared function serve as `handle` (no closure kept alive per subscription).
 */
export function catchAs<T, X = undefined>(
  source: Observable<T>,
  handle: (err: unknown, arg: X) => T,
  arg?: X,
): Observable<T> {
  return new Observable<T>((out) => {
    const caught = new Caught(out, handle, arg as X);
    out.add(caught);
    source.subscribe(caught);
    caught.subscribed();
  });
}

/** The source's subscriber of a {@link catchAs}. */
class Caught<T, X> extends Subscriber<T> {
  #subscribed = false;
  /** An error while the source was being subscribed: delivered once its subscribe returned (as `catchError`). */
  #late: { readonly value: T } | undefined;

  constructor(
    private readonly out: Subscriber<T>,
    private readonly handle: (err: unknown, arg: X) => T,
    private readonly arg: X,
  ) {
    super();
  }

  protected override _next(value: T): void {
    try {
      this.out.next(value);
    } catch (err) {
      this.out.error(err);
    }
  }

  protected override _error(err: unknown): void {
    let value: T;
    try {
      value = this.handle(err, this.arg);
    } catch (thrown) {
      this.out.error(thrown);
      return this.unsubscribe();
    }
    this.unsubscribe();
    if (!this.#subscribed) this.#late = { value };
    else this.#deliver(value);
  }

  /** The source's subscribe returned (its teardown ran already if it failed). */
  subscribed(): void {
    this.#subscribed = true;
    const late = this.#late;
    this.#late = undefined;
    if (late !== undefined) this.#deliver(late.value);
  }

  #deliver(value: T): void {
    this.out.next(value);
    this.out.complete();
  }

  protected override _complete(): void {
    try {
      this.out.complete();
    } finally {
      this.unsubscribe();
    }
  }
}

/**
 * `source.pipe(catchError(handle))`: on the source's error, `handle` makes the replacement, the source is torn
 * down, then the replacement is subscribed in its place. A throwing `handle` errors the result.
 */
export function catchWith<T>(source: Observable<T>, handle: (err: unknown) => ObservableInput<T>): Observable<T> {
  return new Observable<T>((out) => {
    const catching = new Catching(out, handle);
    out.add(catching);
    source.subscribe(catching);
    catching.subscribed();
  });
}

/** The source's subscriber of a {@link catchWith}. */
class Catching<T> extends Subscriber<T> {
  #subscribed = false;
  /** A replacement made while the source was being subscribed: subscribed once that returned (as `catchError`). */
  #late: ObservableInput<T> | undefined;

  constructor(
    private readonly out: Subscriber<T>,
    private readonly handle: (err: unknown) => ObservableInput<T>,
  ) {
    super();
  }

  protected override _next(value: T): void {
    try {
      this.out.next(value);
    } catch (err) {
      this.out.error(err);
    }
  }

  protected override _error(err: unknown): void {
    let input: ObservableInput<T>;
    try {
      input = this.handle(err);
    } catch (thrown) {
      this.out.error(thrown);
      return this.unsubscribe();
    }
    this.unsubscribe();
    if (!this.#subscribed) this.#late = input;
    else from(input).subscribe(this.out);
  }

  /** The source's subscribe returned (its teardown ran already if it failed). */
  subscribed(): void {
    this.#subscribed = true;
    const late = this.#late;
    this.#late = undefined;
    if (late !== undefined) from(late).subscribe(this.out);
  }

  protected override _complete(): void {
    try {
      this.out.complete();
    } finally {
      this.unsubscribe();
    }
  }
}
