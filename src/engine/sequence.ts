import { Observable, Subscriber, from, type ObservableInput, type OperatorFunction, type Unsubscribable } from 'rxjs';
import { Relay } from './relay.js';

/**
 * The engine's sequencing, hand-written (BENCHMARKS.md, sections 5.1–5.2): `concat` and `concatMap` keep a
 * `mergeInternals` alive for as long as their last inner runs (three closures, two or three subscribers, a
 * buffer and a context, ≈ 1.2 KiB each), and an idle run sits inside several of them. These keep one subscriber
 * per live inner and one small object per level, with the same order of effects as RxJS's operators (subscribes,
 * values, errors, completions, teardowns: test/sequence-order-of-effects.test.ts): an error reaches the subscriber
 * first, then the inner is torn down; unsubscribing tears down whatever runs.
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
    seq.start();
  });
}

/** The state of one subscription to a {@link sequence}. */
class Sequence<T> implements Unsubscribable, Done {
  #next = 0;
  #step: Forward<T> | undefined;
  /** In the first pass (as `concat`'s `from(parts)` emits them), a part that completes while it is subscribed... */
  #firstPass = false;
  /** ...is torn down before the next one starts: `start` subscribes that one when its subscribe returned. */
  #again = false;

  constructor(
    readonly out: Subscriber<T>,
    private readonly parts: readonly Part<T>[],
  ) {}

  /** The first pass: parts that complete synchronously follow one another here, each torn down first. */
  start(): void {
    this.#firstPass = true;
    do {
      this.#again = false;
      this.advance();
    } while (this.#again);
    this.#firstPass = false;
  }

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
    // After the first pass a part that completes starts the next at once (as `concat` subscribes a buffered one).
    if (this.#firstPass) this.#again = true;
    else this.advance();
  }

  unsubscribe(): void {
    this.#step?.unsubscribe();
  }
}

/** What a {@link Forward} tells when its source completed (after tearing the source down). */
export interface Done {
  done(): void;
}

/** An inner subscriber: values and the error go on to `out`; its completion goes to `owner`. */
export class Forward<T> extends Relay<T> {
  constructor(
    out: Subscriber<T>,
    private readonly owner: Done,
  ) {
    super(out);
  }

  protected override _next(value: T): void {
    try {
      this.out.next(value);
    } catch (err) {
      this.out.error(err);
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
  return (source) => new Observable<R>((out) => new ConcatEach(out, project).subscribeTo(source));
}

/**
 * The state of one subscription to a {@link concatEach}: the source's subscriber and the projection that runs.
 * `project` (and `finish`, what happens once the source and its last projection completed) are methods, so that a
 * state object can be its own projection ({@link EachThen}).
 */
export abstract class EachOf<T, R> implements Unsubscribable, Done {
  readonly outer: Outer<T>;
  #inner: Forward<R> | undefined;
  #waiting: T[] | undefined;
  #complete = false;

  constructor(readonly out: Subscriber<R>) {
    this.outer = new Outer(this);
  }

  /** What a source value becomes when its turn comes; a throw errors `out`. */
  protected abstract project(value: T): ObservableInput<R>;

  /** The source and its last projection completed: `out` completes. */
  protected finish(): void {
    this.out.complete();
  }

  /** Subscribes the source (once, in `out`'s subscribe). */
  subscribeTo(source: Observable<T>): void {
    this.out.add(this);
    source.subscribe(this.outer);
  }

  push(value: T): void {
    if (this.out.closed) return;
    if (this.#inner !== undefined) (this.#waiting ??= []).push(value);
    else this.#run(value);
  }

  sourceComplete(): void {
    this.#complete = true;
    if (this.#inner === undefined) this.finish();
  }

  done(): void {
    this.#inner = undefined;
    if (this.out.closed) return;
    const waiting = this.#waiting;
    if (waiting !== undefined && waiting.length > 0) return this.#run(waiting.shift() as T);
    if (this.#complete) this.finish();
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

/** {@link concatEach}'s state: the projection a function. */
class ConcatEach<T, R> extends EachOf<T, R> {
  constructor(
    out: Subscriber<R>,
    private readonly fn: (value: T) => ObservableInput<R>,
  ) {
    super(out);
  }

  protected project(value: T): ObservableInput<R> {
    return this.fn(value);
  }
}

/**
 * `concat(source.pipe(concatEach((v) => this.project(v))), defer(() => this.then()))` as one object (a turn's batch
 * then its end: turn.ts), instead of a {@link sequence} over a {@link concatEach}: one level, no parts array, no
 * closures. The same order of effects (test/sequence-order-of-effects.test.ts): `then` runs once the source and its
 * last projection completed, after the source's subscribe returned when they completed while it was subscribed (as
 * `concat`'s first pass); unsubscribing tears down the source, then the projection, then `then`'s input.
 */
export abstract class EachThen<T, R> extends EachOf<T, R> {
  #then: Forward<R> | undefined;
  /** In the first pass (while the source is subscribed): what completes waits until its subscribe returned. */
  #firstPass = false;
  #again = false;

  /** What follows the source's projections; a throw errors `out`. */
  protected abstract then(): ObservableInput<R>;

  override subscribeTo(source: Observable<T>): void {
    this.out.add(this);
    this.#firstPass = true;
    source.subscribe(this.outer);
    if (this.#again) {
      this.#again = false;
      this.#runThen();
    }
    this.#firstPass = false;
    if (this.#again && !this.out.closed) this.out.complete(); // `then`'s input completed while subscribed
  }

  protected override finish(): void {
    this.outer.unsubscribe(); // the source is torn down before `then` starts (as `sequence` tears a part down)
    if (this.#firstPass) this.#again = true;
    else this.#runThen();
  }

  #runThen(): void {
    const { out } = this;
    if (out.closed) return;
    let input: ObservableInput<R>;
    try {
      input = this.then();
    } catch (err) {
      return out.error(err);
    }
    from(input).subscribe((this.#then = new Forward(out, new ThenDone(this))));
  }

  /** `then`'s input completed (its Forward tore it down). */
  thenDone(): void {
    this.#then = undefined;
    if (this.#firstPass) this.#again = true;
    else if (!this.out.closed) this.out.complete();
  }

  override unsubscribe(): void {
    super.unsubscribe();
    this.#then?.unsubscribe();
  }
}

/**
 * `sequence(first, () => source().pipe(concatEach((v) => this.project(v))))` as one object (a turn: its entry stage,
 * then its body and the projection of each response: turn.ts), instead of a {@link sequence} over a
 * {@link concatEach}: one level, no parts array, no closures. `source()` undefined is an empty part. The same order
 * of effects (test/sequence-order-of-effects.test.ts): each part torn down before the next starts (in the first
 * pass, once its subscribe returned); the source torn down once it and its last projection completed, then the
 * result completes; unsubscribing tears down the part that runs (the source, then the projection).
 */
export abstract class FirstThenEach<T, R> extends EachOf<T, R> {
  /** The next part: 0 `first`, 1 the source, 2 none (the result completes). */
  #part = 0;
  #first: Forward<R> | undefined;
  /** In the first pass, a part that completes while it is subscribed: the next starts once its subscribe returned. */
  #firstPass = false;
  #again = false;

  /** The first part. */
  protected abstract first(): ObservableInput<R>;

  /** The source whose values are projected, made when `first` completed; undefined: none (an empty part). */
  protected abstract source(): Observable<T> | undefined;

  /** Starts the first part (once, in `out`'s subscribe). */
  start(): void {
    this.out.add(this); // before any part runs: a synchronous unsubscribe reaches the part that runs then
    this.#firstPass = true;
    do {
      this.#again = false;
      this.#advance();
    } while (this.#again);
    this.#firstPass = false;
  }

  #advance(): void {
    const { out } = this;
    if (out.closed) return;
    const part = this.#part++;
    if (part === 2) return out.complete();
    let input: ObservableInput<R> | Observable<T> | undefined;
    try {
      input = part === 0 ? this.first() : this.source();
    } catch (err) {
      return out.error(err);
    }
    if (part === 0)
      return void from(input as ObservableInput<R>).subscribe((this.#first = new Forward(out, new FirstDone(this))));
    if (input === undefined) return this.#partDone();
    (input as Observable<T>).subscribe(this.outer);
  }

  /** The first part completed (its Forward tore it down). */
  firstDone(): void {
    this.#first = undefined;
    this.#partDone();
  }

  #partDone(): void {
    if (this.#firstPass) this.#again = true;
    else this.#advance();
  }

  /** The source and its last projection completed: the source is torn down, then the result completes. */
  protected override finish(): void {
    this.outer.unsubscribe();
    this.#partDone();
  }

  override unsubscribe(): void {
    this.#first?.unsubscribe();
    super.unsubscribe();
  }
}

/** The owner of a {@link FirstThenEach}'s first part. */
class FirstDone implements Done {
  constructor(private readonly owner: FirstThenEach<any, any>) {}

  done(): void {
    this.owner.firstDone();
  }
}

/** The owner of an {@link EachThen}'s last part. */
class ThenDone implements Done {
  constructor(private readonly owner: EachThen<any, any>) {}

  done(): void {
    this.owner.thenDone();
  }
}

/** The source's subscriber of a {@link concatEach}. */
class Outer<T> extends Subscriber<T> {
  constructor(private readonly each: EachOf<T, any>) {
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
 * `from(items).pipe(concatEach((item) => this.project(item)))` as one object, for a state object that is its own
 * projection (a sequential batch: dispatch.ts): no `concatEach` level, no source subscriber, no buffer. Each item's
 * projection is subscribed when the previous one completed (one that completes while it is subscribed first returns
 * from its subscribe, as `from` then pushes the next); an error reaches `out` before the failing projection is torn
 * down; unsubscribing `out` tears down the projection that runs. Call {@link start} once, in `out`'s subscribe.
 */
export abstract class EachInTurn<T, R> implements Unsubscribable, Done {
  #next = 0;
  #inner: Forward<R> | undefined;
  /** In the first pass (as `from(items)` emits them): a projection done while subscribed lets the pass go on. */
  #firstPass = false;

  constructor(
    protected readonly out: Subscriber<R>,
    protected readonly items: readonly T[],
  ) {}

  /** What `item` becomes when its turn comes; a throw errors `out`. */
  protected abstract project(item: T): ObservableInput<R>;

  start(): void {
    const { out, items } = this;
    out.add(this);
    this.#firstPass = true;
    while (!out.closed && this.#inner === undefined && this.#next < items.length) this.#run();
    this.#firstPass = false;
    if (this.#inner === undefined && this.#next === items.length) out.complete();
  }

  #run(): void {
    const { out } = this;
    let input: ObservableInput<R>;
    try {
      input = this.project(this.items[this.#next++]!);
    } catch (err) {
      return out.error(err);
    }
    from(input).subscribe((this.#inner = new Forward(out, this)));
  }

  /** The projection that ran completed (its Forward tore it down): the next one, or `out` completes. */
  done(): void {
    this.#inner = undefined;
    if (this.#firstPass) return;
    const { out } = this;
    if (out.closed) return;
    if (this.#next < this.items.length) this.#run();
    else out.complete();
  }

  unsubscribe(): void {
    this.#inner?.unsubscribe();
  }
}
