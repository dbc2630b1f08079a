import { concatMap, of, range, tap, type Observable } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import { CancelSignal } from '../src/cancel/index.js';
import { cancellableTimer, hopThenPoll, stage, takeUntilCancelled, untilCancelled } from '../src/operators/index.js';

let testScheduler: TestScheduler;
beforeEach(() => {
  testScheduler = new TestScheduler((actual, expected) => expect(actual).toEqual(expected));
});

/**
 * Schedules `work` at `frame` (>= 2) so that it runs AFTER the actions already due at
 * that frame (cold messages are scheduled when subscribed, at frame 0): scheduling it
 * from inside a frame-1 action gives it a later index in the same frame.
 */
function scheduleLate(work: () => void, frame: number): void {
  testScheduler.schedule(() => testScheduler.schedule(work, frame - 1), 1);
}

describe('takeUntilCancelled', () => {
  it('cancelled before subscribe: the source is never subscribed', () => {
    testScheduler.run(({ cold, expectObservable, expectSubscriptions }) => {
      const sig = new CancelSignal();
      sig.cancel('x');
      const src = cold('-a-b|');
      expectObservable(src.pipe(takeUntilCancelled(sig))).toBe('|');
      expectSubscriptions(src.subscriptions).toBe([]);
    });
  });

  it('cancel mid-stream: completes at the cancel frame and unsubscribes the source', () => {
    testScheduler.run(({ cold, expectObservable, expectSubscriptions }) => {
      const sig = new CancelSignal();
      const src = cold('a-b-c-d|');
      testScheduler.schedule(() => sig.cancel('x'), 3);
      expectObservable(src.pipe(takeUntilCancelled(sig))).toBe('a-b|');
      expectSubscriptions(src.subscriptions).toBe('^--!');
    });
  });

  it('passes values, errors and completion through while not cancelled', () => {
    testScheduler.run(({ cold, expectObservable, expectSubscriptions }) => {
      const sig = new CancelSignal();
      const ok = cold('a-b|');
      const bad = cold('a-#', undefined, new Error('e'));
      expectObservable(ok.pipe(takeUntilCancelled(sig))).toBe('a-b|');
      expectObservable(bad.pipe(takeUntilCancelled(sig))).toBe('a-#', undefined, new Error('e'));
      expectSubscriptions(ok.subscriptions).toBe('^--!');
      expectSubscriptions(bad.subscriptions).toBe('^-!');
    });
  });

  // takeUntil semantics on a tie: whichever action of the frame runs first decides.
  it('same frame, cancel scheduled before the value: the value is not delivered', () => {
    testScheduler.run(({ cold, expectObservable }) => {
      const sig = new CancelSignal();
      const log: string[] = [];
      const src = cold('a-b-|').pipe(tap((v) => log.push(v)));
      testScheduler.schedule(() => {
        log.push('cancel');
        sig.cancel('x');
      }, 2);
      expectObservable(src.pipe(takeUntilCancelled(sig))).toBe('a-|');
      testScheduler.flush();
      expect(log).toEqual(['a', 'cancel']);
    });
  });

  it('same frame, cancel scheduled after the value: the value is delivered (use stage() to make cancel win)', () => {
    testScheduler.run(({ cold, expectObservable }) => {
      const sig = new CancelSignal();
      const log: string[] = [];
      const src = cold('a-b-|').pipe(tap((v) => log.push(v)));
      scheduleLate(() => {
        log.push('cancel');
        sig.cancel('x');
      }, 2);
      expectObservable(src.pipe(takeUntilCancelled(sig))).toBe('a-(b|)');
      testScheduler.flush();
      expect(log).toEqual(['a', 'b', 'cancel']);
    });
  });

  it('a cancel raised synchronously inside the source stops a synchronous source at once', () => {
    const sig = new CancelSignal();
    const seen: number[] = [];
    let pulled = 0;
    range(0, 1e9)
      .pipe(
        tap((v) => {
          pulled++;
          if (v === 3) sig.cancel('stop');
        }),
        takeUntilCancelled(sig),
      )
      .subscribe((v) => seen.push(v));
    expect(seen).toEqual([0, 1, 2]);
    expect(pulled).toBe(4);
  });

  it('registers its listener before subscribing the source and removes it on every teardown', () => {
    const sig = new CancelSignal();
    const order: string[] = [];
    let removed = 0;
    const onCancel = sig.onCancel.bind(sig);
    vi.spyOn(sig, 'onCancel').mockImplementation((listener) => {
      order.push('listen');
      const remove = onCancel(listener);
      return () => {
        removed++;
        remove();
      };
    });
    const source = of(1).pipe(tap({ subscribe: () => order.push('subscribe') }));
    source.pipe(takeUntilCancelled(sig)).subscribe();
    expect(order).toEqual(['listen', 'subscribe']);
    expect(removed).toBe(1);
    const sub = (of(1).pipe(concatMap(() => new Promise<never>(() => {}))) as Observable<unknown>)
      .pipe(takeUntilCancelled(sig))
      .subscribe();
    sub.unsubscribe();
    expect(removed).toBe(2);
  });
});

describe('untilCancelled', () => {
  it('switches to the replacement on cancel, with the reason', () => {
    testScheduler.run(({ cold, expectObservable, expectSubscriptions }) => {
      const sig = new CancelSignal();
      const src = cold('a-b-c|');
      testScheduler.schedule(() => sig.cancel('x'), 3);
      expectObservable(src.pipe(untilCancelled(sig, (r) => of(`stopped:${String(r)}`)))).toBe('a-b(s|)', {
        a: 'a',
        b: 'b',
        s: 'stopped:x',
      });
      expectSubscriptions(src.subscriptions).toBe('^--!');
    });
  });

  it('already cancelled: the replacement runs and the source is never subscribed', () => {
    testScheduler.run(({ cold, expectObservable, expectSubscriptions }) => {
      const sig = new CancelSignal();
      sig.cancel('x');
      const src = cold('a|');
      expectObservable(src.pipe(untilCancelled(sig, (r) => cold('-(r|)', { r })))).toBe('-(r|)', { r: 'x' });
      expectSubscriptions(src.subscriptions).toBe([]);
    });
  });
});

describe('stage (one asapScheduler hop, then poll)', () => {
  it('starts one hop after the event, in the same virtual frame', () => {
    testScheduler.run(({ cold, expectObservable, expectSubscriptions }) => {
      const sig = new CancelSignal();
      const inner = cold('(r|)');
      const out = cold('--x|').pipe(concatMap(() => stage(sig, () => inner)));
      expectObservable(out).toBe('--r|');
      expectSubscriptions(inner.subscriptions).toBe('--(^!)');
    });
  });

  it('same frame, cancel scheduled before the event: the stage never starts', () => {
    testScheduler.run(({ cold, expectObservable }) => {
      const sig = new CancelSignal();
      const log: string[] = [];
      const start = vi.fn(() => cold('(r|)'));
      const out = cold('--x|').pipe(
        tap((v) => log.push(v)),
        concatMap(() => stage(sig, start)),
      );
      testScheduler.schedule(() => {
        log.push('cancel');
        sig.cancel('x');
      }, 2);
      expectObservable(out).toBe('---|');
      testScheduler.flush();
      expect(log).toEqual(['cancel', 'x']);
      expect(start).not.toHaveBeenCalled();
    });
  });

  it('same frame, cancel scheduled after the event: the stage still never starts', () => {
    testScheduler.run(({ cold, expectObservable }) => {
      const sig = new CancelSignal();
      const log: string[] = [];
      const start = vi.fn(() => cold('(r|)'));
      const out = cold('--x|').pipe(
        tap((v) => log.push(v)),
        concatMap(() => stage(sig, start)),
      );
      scheduleLate(() => {
        log.push('cancel');
        sig.cancel('x');
      }, 2);
      expectObservable(out).toBe('---|');
      testScheduler.flush();
      expect(log).toEqual(['x', 'cancel']);
      expect(start).not.toHaveBeenCalled();
    });
  });

  it('a cancel raised synchronously by another subscriber of the same event wins', () => {
    testScheduler.run(({ hot, expectObservable }) => {
      const sig = new CancelSignal();
      const start = vi.fn(() => of('r'));
      const trigger = hot('--x|');
      expectObservable(trigger.pipe(concatMap(() => stage(sig, start)))).toBe('---|');
      // subscribed after the stage pipeline (which subscribes at frame 0), so it sees x second
      testScheduler.schedule(() => trigger.subscribe(() => sig.cancel('sync')), 1);
      testScheduler.flush();
      expect(start).not.toHaveBeenCalled();
    });
  });

  it('a cancel and reset between subscribe and the hop still stops the stage', () => {
    testScheduler.run(({ cold, expectObservable }) => {
      const sig = new CancelSignal();
      const start = vi.fn(() => of('r'));
      const out = cold('--x|').pipe(concatMap(() => stage(sig, start)));
      scheduleLate(() => {
        sig.cancel('x');
        sig.reset();
      }, 2);
      expectObservable(out).toBe('---|');
      testScheduler.flush();
      expect(sig.isCancelled).toBe(false);
      expect(start).not.toHaveBeenCalled();
    });
  });

  it('unsubscribing before the hop removes the scheduled action', () => {
    testScheduler.run(() => {
      const sig = new CancelSignal();
      const start = vi.fn(() => of('r'));
      const sub = stage(sig, start).subscribe();
      expect(testScheduler.actions.length).toBe(1);
      sub.unsubscribe();
      expect(testScheduler.actions.length).toBe(0);
      testScheduler.flush();
      expect(start).not.toHaveBeenCalled();
    });
  });

  it('a throwing start errors the result; hopThenPoll is the operator form', () => {
    testScheduler.run(({ cold, expectObservable, expectSubscriptions }) => {
      const sig = new CancelSignal();
      const err = new Error('start failed');
      expectObservable(
        stage(sig, () => {
          throw err;
        }),
      ).toBe('#', undefined, err);
      const src = cold('-a|');
      expectObservable(src.pipe(hopThenPoll(sig))).toBe('-a|');
      expectSubscriptions(src.subscriptions).toBe('^-!');
    });
  });
});

describe('cancellableTimer', () => {
  it('emits 0 then completes after dueMs', () => {
    testScheduler.run(({ expectObservable }) => {
      const sig = new CancelSignal();
      expectObservable(cancellableTimer(10, sig)).toBe('10ms (a|)', { a: 0 });
    });
  });

  it('abandoned on cancel: completes at once and leaves no scheduled action (default scheduler)', () => {
    testScheduler.run(({ expectObservable }) => {
      const sig = new CancelSignal();
      const pending: number[] = [];
      testScheduler.schedule(() => {
        sig.cancel('x');
        pending.push(testScheduler.actions.length);
      }, 5);
      expectObservable(cancellableTimer(10, sig)).toBe('-----|');
      testScheduler.flush();
      expect(pending).toEqual([0]);
    });
  });

  it('abandoned on cancel: no action left on an explicit VirtualTimeScheduler', () => {
    const sig = new CancelSignal();
    const log: unknown[] = [];
    cancellableTimer(10, sig, testScheduler).subscribe({
      next: (v) => log.push(v),
      complete: () => log.push(`complete@${testScheduler.frame}`),
    });
    expect(testScheduler.actions.length).toBe(1);
    testScheduler.schedule(() => sig.cancel('x'), 5);
    testScheduler.flush();
    expect(log).toEqual(['complete@5']);
    expect(testScheduler.actions.length).toBe(0);
  });

  it('already cancelled: schedules nothing and completes synchronously', () => {
    testScheduler.run(() => {
      const sig = new CancelSignal();
      sig.cancel('x');
      const log: string[] = [];
      cancellableTimer(10, sig).subscribe({ next: () => log.push('next'), complete: () => log.push('complete') });
      expect(log).toEqual(['complete']);
      expect(testScheduler.actions.length).toBe(0);
    });
  });
});
