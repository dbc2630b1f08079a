import {
  EMPTY,
  Observable,
  Subject,
  type ObservableInput,
  type Subscriber,
  catchError,
  from,
  concat,
  concatMap,
  defer,
  expand,
  filter,
  of,
  throwError,
} from 'rxjs';
import { describe, expect, it } from 'vitest';
import { catchAs, catchWith, expandOn } from '../src/engine/loop-operators.js';
import { EachInTurn, EachThen, FirstThenEach, concatEach, sequence } from '../src/engine/sequence.js';

/** An {@link EachInTurn} whose projection is a function (the engine's are methods of the state object). */
class Each<T, R> extends EachInTurn<T, R> {
  constructor(
    out: Subscriber<R>,
    items: readonly T[],
    private readonly fn: (item: T) => ObservableInput<R>,
  ) {
    super(out, items);
  }

  protected project(item: T): ObservableInput<R> {
    return this.fn(item);
  }
}

function eachInTurn<T, R>(items: readonly T[], fn: (item: T) => ObservableInput<R>): Observable<R> {
  return new Observable<R>((out) => new Each(out, items, fn).start());
}

/** An {@link EachThen} whose projection and last part are functions (the engine's are methods). */
class Then<T, R> extends EachThen<T, R> {
  constructor(
    out: Subscriber<R>,
    private readonly fn: (value: T) => ObservableInput<R>,
    private readonly last: () => ObservableInput<R>,
  ) {
    super(out);
  }

  protected project(value: T): ObservableInput<R> {
    return this.fn(value);
  }

  protected then(): ObservableInput<R> {
    return this.last();
  }
}

function eachThen<T, R>(
  source: Observable<T>,
  fn: (value: T) => ObservableInput<R>,
  last: () => ObservableInput<R>,
): Observable<R> {
  return new Observable<R>((out) => new Then(out, fn, last).subscribeTo(source));
}

/** A {@link FirstThenEach} whose parts and projection are functions (the engine's are methods). */
class FirstThen<T, R> extends FirstThenEach<T, R> {
  constructor(
    out: Subscriber<R>,
    private readonly head: () => ObservableInput<R>,
    private readonly body: () => Observable<T> | undefined,
    private readonly fn: (value: T) => ObservableInput<R>,
  ) {
    super(out);
  }

  protected first(): ObservableInput<R> {
    return this.head();
  }

  protected source(): Observable<T> | undefined {
    return this.body();
  }

  protected project(value: T): ObservableInput<R> {
    return this.fn(value);
  }
}

function firstThenEach<T, R>(
  head: () => ObservableInput<R>,
  body: () => Observable<T> | undefined,
  fn: (value: T) => ObservableInput<R>,
): Observable<R> {
  return new Observable<R>((out) => new FirstThen(out, head, body, fn).start());
}

/** What {@link FirstThenEach} replaces: `sequence(first, () => source.pipe(concatEach(project)))`, with RxJS. */
function theirFirstThenEach<T, R>(
  head: () => ObservableInput<R>,
  body: () => Observable<T> | undefined,
  fn: (value: T) => ObservableInput<R>,
): Observable<R> {
  return concat(
    defer(head),
    defer(() => body()?.pipe(concatMap(fn)) ?? EMPTY),
  );
}

/** An Observable that logs its subscribe, values, end and teardown, then emits `values` and ends as told. */
function logged<T>(log: string[], name: string, values: readonly T[], end: 'complete' | 'error' | 'open' = 'complete') {
  return new Observable<T>((subscriber) => {
    log.push(`${name} subscribed`);
    for (const v of values) subscriber.next(v);
    if (end === 'complete') subscriber.complete();
    else if (end === 'error') subscriber.error(new Error(`${name} failed`));
    return () => log.push(`${name} torn down`);
  });
}

/** Subscribes `source$`, logging what it emits, then returns the log (and unsubscribes when `cut` is set). */
function run<T>(log: string[], source$: Observable<T>, cut = false): string[] {
  const sub = source$.subscribe({
    next: (v) => log.push(`next ${String(v)}`),
    error: (e: Error) => log.push(`error ${e.message}`),
    complete: () => log.push('complete'),
  });
  if (cut) {
    log.push('unsubscribe');
    sub.unsubscribe();
  }
  return log;
}

describe("the engine's hand-written sequencing has RxJS's order of effects", () => {
  it('sequence: each part subscribed after the previous one was torn down, a function part when its turn comes', () => {
    const make = (log: string[]) => [
      logged(log, 'a', [1, 2]),
      () => {
        log.push('b made');
        return logged(log, 'b', [3]);
      },
      logged(log, 'c', [4]),
    ];
    const mine: string[] = [];
    const theirs: string[] = [];
    const [a1, b1, c1] = make(mine);
    run(mine, sequence(a1!, b1!, c1!));
    const [a2, b2, c2] = make(theirs);
    run(theirs, concat(a2 as Observable<number>, defer(b2 as () => Observable<number>), c2 as Observable<number>));
    expect(mine).toEqual(theirs);
    expect(mine).toEqual([
      'a subscribed',
      'next 1',
      'next 2',
      'a torn down',
      'b made',
      'b subscribed',
      'next 3',
      'b torn down',
      'c subscribed',
      'next 4',
      'c torn down',
      'complete',
    ]);
  });

  it('sequence: an error reaches the subscriber before the failing part is torn down; later parts never start', () => {
    const mine: string[] = [];
    const theirs: string[] = [];
    run(mine, sequence(logged(mine, 'a', [1], 'error'), logged(mine, 'b', [2])));
    run(theirs, concat(logged(theirs, 'a', [1], 'error'), logged(theirs, 'b', [2])));
    expect(mine).toEqual(theirs);
    expect(mine).toEqual(['a subscribed', 'next 1', 'error a failed', 'a torn down']);
  });

  it('sequence: unsubscribing tears down the part that runs, and no further part starts', () => {
    const mine: string[] = [];
    const theirs: string[] = [];
    run(mine, sequence(logged(mine, 'a', [1], 'open'), logged(mine, 'b', [2])), true);
    run(theirs, concat(logged(theirs, 'a', [1], 'open'), logged(theirs, 'b', [2])), true);
    expect(mine).toEqual(theirs);
    expect(mine).toEqual(['a subscribed', 'next 1', 'unsubscribe', 'a torn down']);
  });

  it('concatEach: values that arrive while a projection runs wait for it, in order; completes after the last', () => {
    const make = (log: string[]) => {
      const source = new Subject<number>();
      const gates = [new Subject<void>(), new Subject<void>(), new Subject<void>()];
      const project = (v: number) =>
        new Observable<string>((s) => {
          log.push(`p${v} subscribed`);
          s.next(`v${v}`);
          const sub = gates[v]!.subscribe(() => s.complete());
          return () => {
            sub.unsubscribe();
            log.push(`p${v} torn down`);
          };
        });
      return { source, gates, project };
    };
    const drive = (log: string[], op: (p: (v: number) => Observable<string>) => any) => {
      const { source, gates, project } = make(log);
      run(log, source.pipe(op(project)));
      source.next(0);
      source.next(1);
      source.next(2);
      source.complete();
      log.push('source done');
      for (const g of gates) g.next();
      return log;
    };
    const mine = drive([], (p) => concatEach(p));
    const theirs = drive([], (p) => concatMap(p));
    expect(mine).toEqual(theirs);
    expect(mine).toEqual([
      'p0 subscribed',
      'next v0',
      'source done',
      'p0 torn down',
      'p1 subscribed',
      'next v1',
      'p1 torn down',
      'p2 subscribed',
      'next v2',
      'p2 torn down',
      'complete',
    ]);
  });

  it('expandOn: the next turn is subscribed as soon as the previous one asks for it, before that one ends', () => {
    const AGAIN = 'again' as const;
    const make = (log: string[]) => {
      let n = 0;
      return () => {
        const i = ++n;
        return logged<string>(log, `turn ${i}`, i < 3 ? [AGAIN] : ['done']);
      };
    };
    const mine: string[] = [];
    const nextMine = make(mine);
    run(mine, expandOn<string, typeof AGAIN>(nextMine(), AGAIN, nextMine));
    const theirs: string[] = [];
    const nextTheirs = make(theirs);
    run(
      theirs,
      nextTheirs().pipe(
        expand((d) => (d === AGAIN ? nextTheirs() : EMPTY)),
        filter((d) => d !== AGAIN),
      ),
    );
    expect(mine).toEqual(theirs);
    expect(mine).toEqual([
      'turn 1 subscribed',
      'turn 2 subscribed',
      'turn 3 subscribed',
      'next done',
      'turn 3 torn down',
      'turn 2 torn down',
      'complete',
      'turn 1 torn down',
    ]);
  });

  it('catchAs and catchWith: the handler runs, the source is torn down, then the replacement is delivered', () => {
    const mine: string[] = [];
    const theirs: string[] = [];
    const handled = (log: string[]) => (e: unknown) => {
      log.push(`handled ${(e as Error).message}`);
      return 'failed';
    };
    run(mine, catchAs(logged<string>(mine, 'a', ['x'], 'error'), handled(mine)));
    run(theirs, logged<string>(theirs, 'a', ['x'], 'error').pipe(catchError((e) => of(handled(theirs)(e)))));
    expect(mine).toEqual(theirs);
    expect(mine).toEqual(['a subscribed', 'next x', 'handled a failed', 'a torn down', 'next failed', 'complete']);

    const mine2: string[] = [];
    const theirs2: string[] = [];
    const replace = (log: string[]) => (e: unknown) => {
      log.push(`handled ${(e as Error).message}`);
      return (e as Error).message === 'a failed' ? logged(log, 'b', ['y']) : throwError(() => e);
    };
    run(mine2, catchWith(logged<string>(mine2, 'a', [], 'error'), replace(mine2)));
    run(theirs2, logged<string>(theirs2, 'a', [], 'error').pipe(catchError(replace(theirs2))));
    expect(mine2).toEqual(theirs2);
    expect(mine2).toEqual([
      'a subscribed',
      'handled a failed',
      'a torn down',
      'b subscribed',
      'next y',
      'complete',
      'b torn down',
    ]);
  });

  it('EachInTurn: each item projected when the previous projection completed, synchronous ones first returning', () => {
    const drive = (log: string[], each: (p: (v: number) => Observable<string>) => Observable<string>) => {
      const gates = [new Subject<void>(), new Subject<void>(), new Subject<void>(), new Subject<void>()];
      const project = (v: number) =>
        new Observable<string>((s) => {
          log.push(`p${v} subscribed`);
          s.next(`v${v}`);
          // Even items complete while they are subscribed, odd ones when their gate opens.
          if (v % 2 === 0) s.complete();
          const sub = gates[v]!.subscribe(() => s.complete());
          log.push(`p${v} subscribe returned`);
          return () => {
            sub.unsubscribe();
            log.push(`p${v} torn down`);
          };
        });
      run(log, each(project));
      log.push('subscribed');
      for (const g of gates) g.next();
      return log;
    };
    const items = [0, 2, 1, 3];
    const mine = drive([], (p) => eachInTurn(items, p));
    const theirs = drive([], (p) => from(items).pipe(concatMap(p)));
    expect(mine).toEqual(theirs);
    expect(mine).toEqual([
      'p0 subscribed',
      'next v0',
      'p0 subscribe returned',
      'p0 torn down',
      'p2 subscribed',
      'next v2',
      'p2 subscribe returned',
      'p2 torn down',
      'p1 subscribed',
      'next v1',
      'p1 subscribe returned',
      'subscribed',
      'p1 torn down',
      'p3 subscribed',
      'next v3',
      'p3 subscribe returned',
      'p3 torn down',
      'complete',
    ]);
  });

  it('EachInTurn: an error reaches the subscriber before its projection is torn down; no later item is projected', () => {
    const mine: string[] = [];
    const theirs: string[] = [];
    const fails = (log: string[]) => (v: number) => logged(log, `p${v}`, [v], v === 1 ? 'error' : 'complete');
    run(mine, eachInTurn([0, 1, 2], fails(mine)));
    run(theirs, from([0, 1, 2]).pipe(concatMap(fails(theirs))));
    expect(mine).toEqual(theirs);
    expect(mine).toEqual([
      'p0 subscribed',
      'next 0',
      'p0 torn down',
      'p1 subscribed',
      'next 1',
      'error p1 failed',
      'p1 torn down',
    ]);
  });

  it('EachInTurn: unsubscribing tears down the projection that runs; no later item is projected', () => {
    const mine: string[] = [];
    const theirs: string[] = [];
    const open = (log: string[]) => (v: number) => logged(log, `p${v}`, [v], v === 1 ? 'open' : 'complete');
    run(mine, eachInTurn([0, 1, 2], open(mine)), true);
    run(theirs, from([0, 1, 2]).pipe(concatMap(open(theirs))), true);
    expect(mine).toEqual(theirs);
    expect(mine).toEqual([
      'p0 subscribed',
      'next 0',
      'p0 torn down',
      'p1 subscribed',
      'next 1',
      'unsubscribe',
      'p1 torn down',
    ]);
  });

  it('EachInTurn: no items completes at once; a throwing projection errors the result', () => {
    const mine: string[] = [];
    const theirs: string[] = [];
    run(
      mine,
      eachInTurn<number, number>([], (v) => of(v)),
    );
    run(theirs, from([] as number[]).pipe(concatMap((v) => of(v))));
    const boom = (): Observable<number> => {
      throw new Error('project failed');
    };
    run(mine, eachInTurn([0], boom));
    run(theirs, from([0]).pipe(concatMap(boom)));
    expect(mine).toEqual(theirs);
    expect(mine).toEqual(['complete', 'error project failed']);
  });

  it('EachThen: the projections in turn, the source torn down, then the last part; as concat over concatMap', () => {
    let sourceLast = false;
    const drive = (
      log: string[],
      compose: (
        source: Observable<number>,
        p: (v: number) => Observable<string>,
        last: () => Observable<string>,
      ) => Observable<string>,
    ) => {
      const source = new Subject<number>();
      const gate = new Subject<void>();
      const source$ = new Observable<number>((s) => {
        log.push('source subscribed');
        const sub = source.subscribe(s);
        return () => {
          sub.unsubscribe();
          log.push('source torn down');
        };
      });
      const project = (v: number) =>
        new Observable<string>((s) => {
          log.push(`p${v} subscribed`);
          s.next(`v${v}`);
          const sub = gate.subscribe(() => s.complete());
          return () => {
            sub.unsubscribe();
            log.push(`p${v} torn down`);
          };
        });
      const last = () => {
        log.push('last made');
        return logged(log, 'last', ['end']);
      };
      run(log, compose(source$, project, last));
      source.next(1);
      source.next(2);
      gate.next();
      if (sourceLast) gate.next();
      source.complete();
      log.push('source done');
      if (!sourceLast) gate.next();
      return log;
    };
    const mine = drive([], (s, p, last) => eachThen(s, p, last));
    const theirs = drive([], (s, p, last) => concat(s.pipe(concatMap(p)), defer(last)));
    expect(mine).toEqual(theirs);
    // The source completing after the last projection: it is torn down before the last part is made.
    sourceLast = true;
    const mine2 = drive([], (s, p, last) => eachThen(s, p, last));
    const theirs2 = drive([], (s, p, last) => concat(s.pipe(concatMap(p)), defer(last)));
    expect(mine2).toEqual(theirs2);
    expect(mine2.slice(-8)).toEqual([
      'p2 torn down',
      'source torn down',
      'last made',
      'last subscribed',
      'next end',
      'complete',
      'last torn down',
      'source done',
    ]);
    sourceLast = false;
    expect(mine).toEqual([
      'source subscribed',
      'p1 subscribed',
      'next v1',
      'p1 torn down',
      'p2 subscribed',
      'next v2',
      'source torn down',
      'source done',
      'p2 torn down',
      'last made',
      'last subscribed',
      'next end',
      'complete',
      'last torn down',
    ]);
  });

  it('EachThen: a source done before its projection ends is torn down at once, then the last part after it', () => {
    const mine: string[] = [];
    const theirs: string[] = [];
    const last = (log: string[]) => () => logged<number | string>(log, 'last', ['end']);
    const project = (log: string[]) => (v: number) => logged<number | string>(log, `p${v}`, [v * 10]);
    run(mine, eachThen(logged(mine, 'source', [1, 2]), project(mine), last(mine)));
    run(theirs, concat(logged(theirs, 'source', [1, 2]).pipe(concatMap(project(theirs))), defer(last(theirs))));
    expect(mine).toEqual(theirs);
    expect(mine).toEqual([
      'source subscribed',
      'p1 subscribed',
      'next 10',
      'p1 torn down',
      'p2 subscribed',
      'next 20',
      'p2 torn down',
      'source torn down',
      'last subscribed',
      'next end',
      'last torn down',
      'complete',
    ]);
  });

  it('EachThen: an error of a projection reaches the subscriber first; unsubscribing tears down what runs', () => {
    const mine: string[] = [];
    const theirs: string[] = [];
    const last = (log: string[]) => () => logged<number | string>(log, 'last', ['end']);
    const fails = (log: string[]) => (v: number) => logged<number | string>(log, `p${v}`, [v], 'error');
    run(mine, eachThen(logged(mine, 'source', [1, 2], 'open'), fails(mine), last(mine)));
    run(theirs, concat(logged(theirs, 'source', [1, 2], 'open').pipe(concatMap(fails(theirs))), defer(last(theirs))));
    expect(mine).toEqual(theirs);
    expect(mine).toEqual([
      'source subscribed',
      'p1 subscribed',
      'next 1',
      'error p1 failed',
      'p1 torn down',
      'source torn down',
    ]);

    const mine2: string[] = [];
    const theirs2: string[] = [];
    const open = (log: string[]) => (v: number) => logged<number | string>(log, `p${v}`, [v], 'open');
    run(mine2, eachThen(logged(mine2, 'source', [1], 'open'), open(mine2), last(mine2)), true);
    run(
      theirs2,
      concat(logged(theirs2, 'source', [1], 'open').pipe(concatMap(open(theirs2))), defer(last(theirs2))),
      true,
    );
    expect(mine2).toEqual(theirs2);
    expect(mine2).toEqual([
      'source subscribed',
      'p1 subscribed',
      'next 1',
      'unsubscribe',
      'source torn down',
      'p1 torn down',
    ]);
  });

  it('FirstThenEach: the first part, torn down, then the source with each value projected in turn', () => {
    const drive = (log: string[], compose: typeof firstThenEach<number, string>, sync: boolean) => {
      const gate = new Subject<void>();
      const head = () => logged(log, 'first', ['entered'], sync ? 'complete' : 'open');
      const firstGate = new Subject<void>();
      const head$ = () =>
        sync
          ? head()
          : new Observable<string>((s) => {
              log.push('first subscribed');
              const sub = firstGate.subscribe(() => s.complete());
              return () => {
                sub.unsubscribe();
                log.push('first torn down');
              };
            });
      const project = (v: number) =>
        new Observable<string>((s) => {
          log.push(`p${v} subscribed`);
          s.next(`v${v}`);
          const sub = gate.subscribe(() => s.complete());
          return () => {
            sub.unsubscribe();
            log.push(`p${v} torn down`);
          };
        });
      run(
        log,
        compose(head$, () => logged(log, 'source', [1, 2]), project),
      );
      log.push('subscribed');
      firstGate.next();
      gate.next();
      gate.next();
      return log;
    };
    for (const sync of [true, false]) {
      const mine = drive([], firstThenEach, sync);
      const theirs = drive([], theirFirstThenEach, sync);
      expect(mine).toEqual(theirs);
    }
    expect(drive([], firstThenEach, false)).toEqual([
      'first subscribed',
      'subscribed',
      'first torn down',
      'source subscribed',
      'p1 subscribed',
      'next v1',
      'source torn down',
      'p1 torn down',
      'p2 subscribed',
      'next v2',
      'p2 torn down',
      'complete',
    ]);
  });

  it('FirstThenEach: no source completes after the first part; errors and unsubscribing as sequence', () => {
    const cases: [string, (log: string[]) => Parameters<typeof firstThenEach<number, number>>, boolean][] = [
      ['no source', (log) => [() => logged(log, 'first', [0]), () => undefined, (v) => of(v)], false],
      [
        'first fails',
        (log) => [() => logged(log, 'first', [0], 'error'), () => logged(log, 's', [1]), (v) => of(v)],
        false,
      ],
      [
        'source fails',
        (log) => [() => logged(log, 'first', [0]), () => logged(log, 's', [1], 'error'), (v) => of(v)],
        false,
      ],
      [
        'projection fails',
        (log) => [
          () => logged(log, 'first', [0]),
          () => logged(log, 's', [1, 2]),
          (v) => logged(log, `p${v}`, [v], 'error'),
        ],
        false,
      ],
      [
        'cut in the first',
        (log) => [() => logged(log, 'first', [0], 'open'), () => logged(log, 's', [1]), (v) => of(v)],
        true,
      ],
      [
        'cut in a projection',
        (log) => [
          () => logged(log, 'first', [0]),
          () => logged(log, 's', [1], 'open'),
          (v) => logged(log, `p${v}`, [v], 'open'),
        ],
        true,
      ],
    ];
    for (const [name, make, cut] of cases) {
      const mine = [name];
      const theirs = [name];
      run(mine, firstThenEach(...make(mine)), cut);
      run(theirs, theirFirstThenEach(...make(theirs)), cut);
      expect(mine).toEqual(theirs);
    }
  });
});
