import { Observable, Subscriber, from, type ObservableInput, type OperatorFunction, type Unsubscribable } from 'rxjs';

/**
 * The engine's sequencing, hand-written (BENCHMARKS.md, sections 5.1–5.2): `concat` and `concatMap` keep a
 * `mergeInternals` alive for as long as their last inner runs (three closures, two or three subscribers, a
 * buffer and a context, ≈ 1.2 KiB each), and an idle run sits inside several of them. These keep one subscriber
 * per live inner and one small object per level, with the same order of effects as RxJS's operators: an inner
 * that completes is torn down before the next one is subscribed; an error reaches the subscriber first, then
 * the inner is torn down; unsubscribing tears down whatever runs.
 */

/** A part of a {@link sequence}: an Observable, or a function that makes its input when its turn comes (`defer`). */
export type Part<T> = Observable<T> | (() => ObservableInput<T>);

/**
 * `concat(...)` with each part subscribed when the previous one completed (a function part is called then, as
 * `defer` would: a throw errors the result). Emits every part's values in order; errors with the first error.
 */
export function sequence<T>(...parts: readonly Part<T>[]): Observable<T> {
  return new Observable<T>((out) => {
    const seq = new Sequence(out, parts);
    out.add(seq); // before any part runs: a synchronous unsubscribe reaches the part that runs then
    seq.advance();
  });
}

/** The state of one subscription to a {@link sequence}. */
class Sequence<T> implements Unsubscribable, Done {
  #next = 0;
  #step: Forward<T> | undefined;

  constructor(
    readonly out: Subscriber<T>,
    private readonly parts: readonly Part<T>[],
  ) {}

  /** Subscribes the next part, or completes. */
  advance(): void {
    const { out, parts } = this;
    this.#step = undefined;
    if (out.closed) return;
    if (this.#next === parts.length) return out.complete();
    const part = parts[this.#next++]!;
    let input: ObservableInput<T>;
    if (typeof part === 'function') {
      try {
        input = part();
      } catch (err) {
        return out.error(err);
      }
    } else input = part;
    from(input).subscribe((this.#step = new Forward(out, this)));
  }

  done(): void {
    this.advance();
  }

  unsubscribe(): void {
    this.#step?.unsubscribe();
  }
}

/** What a {@link Forward} tells when its source completed (after tearing the source down). */
interface Done {
  done(): void;
}

/** An inner subscriber: values and the error go on to `out`; its completion goes to `owner`. */
class Forward<T> extends Subscriber<T> {
  constructor(
    private readonly out: Subscriber<T>,
    private readonly owner: Done,
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
    try {
      this.out.error(err);
    } finally {
      this.unsubscribe();
    }
  }

  protected override _complete(): void {
    this.unsubscribe();
    this.owner.done();
  }
}

/**
 * `concatMap(project)`: each source value's projection runs after the previous one completed (values that
 * arrive meanwhile wait in a buffer, made when the first one has to wait). Completes when the source and the
 * last projection did; a throwing `project` errors the result.
 */
export function concatEach<T, R>(project: (value: T) => ObservableInput<R>): OperatorFunction<T, R> {
  return (source) =>
    new Observable<R>((out) => {
      const each = new ConcatEach(out, project);
      out.add(each);
      source.subscribe(each.outer);
    });
}

/** The state of one subscription to {@link concatEach}: the source's subscriber and the projection that runs. */
class ConcatEach<T, R> implements Unsubscribable, Done {
  readonly outer: Outer<T>;
  #inner: Forward<R> | undefined;
  #waiting: T[] | undefined;
  #complete = false;

  constructor(
    readonly out: Subscriber<R>,
    private readonly project: (value: T) => ObservableInput<R>,
  ) {
    this.outer = new Outer(this);
  }

  push(value: T): void {
    if (this.out.closed) return;
    if (this.#inner !== undefined) (this.#waiting ??= []).push(value);
    else this.#run(value);
  }

  sourceComplete(): void {
    this.#complete = true;
    if (this.#inner === undefined) this.out.complete();
  }

  done(): void {
    this.#inner = undefined;
    if (this.out.closed) return;
    const waiting = this.#waiting;
    if (waiting !== undefined && waiting.length > 0) return this.#run(waiting.shift() as T);
    if (this.#complete) this.out.complete();
  }

  #run(value: T): void {
    const { out } = this;
    let input: ObservableInput<R>;
    try {
      input = this.project(value);
    } catch (err) {
      return out.error(err);
    }
    from(input).subscribe((this.#inner = new Forward(out, this)));
  }

  unsubscribe(): void {
    this.outer.unsubscribe();
    this.#inner?.unsubscribe();
  }
}

/** The source's subscriber of a {@link concatEach}. */
class Outer<T> extends Subscriber<T> {
  constructor(private readonly each: ConcatEach<T, any>) {
    super();
  }

  protected override _next(value: T): void {
    try {
      this.each.push(value);
    } catch (err) {
      this.each.out.error(err);
    }
  }

  protected override _error(err: unknown): void {
    try {
      this.each.out.error(err);
    } finally {
      this.unsubscribe();
    }
  }

  protected override _complete(): void {
    try {
      this.each.sourceComplete();
    } finally {
      this.unsubscribe();
    }
  }
}

/**
 * `first$.pipe(expand((v) => (v === again ? next() : EMPTY)), filter((v) => v !== again))`: emits the values other
 * than `again`; on `again`, subscribes `next()` at once, as `expand` does (while the inner that gave it still
 * runs), and expands its values the same way. Completes when `first$` and every inner completed.
 */
export function expandOn<T, A>(first$: Observable<T | A>, again: A, next: () => Observable<T | A>): Observable<T> {
  return new Observable<T>((out) => {
    const loop = new Expand(out, again, next);
    out.add(loop);
    loop.subscribe(first$);
  });
}

/** The state of one subscription to {@link expandOn}: the live inners (one, two while a turn hands over). */
class Expand<T, A> implements Unsubscribable {
  readonly #live: ExpandStep<T, A>[] = [];

  constructor(
    readonly out: Subscriber<T>,
    private readonly again: A,
    private readonly next: () => Observable<T | A>,
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
      next$ = this.next();
    } catch (err) {
      return out.error(err);
    }
    this.subscribe(next$);
  }

  done(step: ExpandStep<T, A>): void {
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
class ExpandStep<T, A> extends Subscriber<T | A> {
  constructor(private readonly loop: Expand<T, A>) {
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
 * `source.pipe(catchError((err) => of(handle(err))))`: on the source's error, `handle` makes the value, the source is
 * torn down, then the value is emitted and the result completes. A throwing `handle` errors the result.
 */
export function catchAs<T>(source: Observable<T>, handle: (err: unknown) => T): Observable<T> {
  return new Observable<T>((out) => {
    const caught = new Caught(out, handle);
    out.add(caught);
    source.subscribe(caught);
  });
}

/** The source's subscriber of a {@link catchAs}. */
class Caught<T> extends Subscriber<T> {
  constructor(
    private readonly out: Subscriber<T>,
    private readonly handle: (err: unknown) => T,
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
      value = this.handle(err);
    } catch (thrown) {
      this.out.error(thrown);
      return this.unsubscribe();
    }
    this.unsubscribe();
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
  });
}

/** The source's subscriber of a {@link catchWith}. */
class Catching<T> extends Subscriber<T> {
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
    from(input).subscribe(this.out);
  }

  protected override _complete(): void {
    try {
      this.out.complete();
    } finally {
      this.unsubscribe();
    }
  }
}
