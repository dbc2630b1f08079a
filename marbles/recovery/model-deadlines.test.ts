/**
 * The model deadlines operator (docs/recovery.md deadlines, "one idle timer";
 * checkpoint 2: model request; checkpoint 3: model stream) in virtual
 * time: first event, stream idle (one timer + a timestamp), whole request;
 * non-streaming requests only have the whole-request deadline.
 */
import { TestScheduler } from 'rxjs/testing';
import { asyncScheduler } from 'rxjs';
import { beforeEach, describe, expect, it } from 'vitest';
import { modelDeadlines } from '../../src/engine/deadlines.js';
import { TimeoutError } from '../../src/errors.js';

let ts: TestScheduler;
beforeEach(() => {
  ts = new TestScheduler((actual, expected) => expect(actual).toEqual(expected));
});

describe('modelDeadlines (streamed requests)', () => {
  it('idle: an error 50 frames after the last event, and the source is torn down', () => {
    ts.run(({ cold, expectObservable, expectSubscriptions }) => {
      const src = cold('10ms a 9ms b 99ms c|');
      expectObservable(src.pipe(modelDeadlines({ idleMs: 50 }, asyncScheduler, true))).toBe(
        '10ms a 9ms b 49ms #',
        undefined,
        new TimeoutError('idle', 50),
      );
      expectSubscriptions(src.subscriptions).toBe('^ 69ms !');
    });
  });

  it('without firstEventMs the idle limit also bounds the wait for the first event (kind idle)', () => {
    ts.run(({ cold, expectObservable }) => {
      expectObservable(cold('80ms a|').pipe(modelDeadlines({ idleMs: 50 }, asyncScheduler, true))).toBe(
        '50ms #',
        undefined,
        new TimeoutError('idle', 50),
      );
    });
  });

  it('first event: kind first_event at firstEventMs', () => {
    ts.run(({ cold, expectObservable }) => {
      expectObservable(
        cold('80ms a|').pipe(modelDeadlines({ firstEventMs: 30, idleMs: 50 }, asyncScheduler, true)),
      ).toBe('30ms #', undefined, new TimeoutError('first_event', 30));
    });
  });

  it('a first event early under a long firstEventMs: the idle limit starts from it, not from the first-event timer', () => {
    ts.run(({ cold, expectObservable }) => {
      expectObservable(
        cold('10ms a 200ms b|').pipe(modelDeadlines({ firstEventMs: 1000, idleMs: 50 }, asyncScheduler, true)),
      ).toBe('10ms a 49ms #', undefined, new TimeoutError('idle', 50));
    });
  });

  it('firstEventMs alone stops watching at the first event (its timer is removed at once)', () => {
    ts.run(({ cold, expectObservable, flush }) => {
      const out = cold('10ms a 500ms b|').pipe(modelDeadlines({ firstEventMs: 30 }, asyncScheduler, true));
      expectObservable(out).toBe('10ms a 500ms b|');
      // only the source's own messages (b, complete)
      ts.schedule(() => expect(ts.actions.map((a) => a.delay)).toEqual([511, 512]), 11);
      flush();
    });
  });

  it('events within the idle limit keep the stream alive; the whole-request deadline still ends it', () => {
    ts.run(({ cold, expectObservable }) => {
      const src = cold('a 39ms b 39ms c 39ms d 39ms e|');
      expectObservable(src.pipe(modelDeadlines({ idleMs: 50, requestMs: 100 }, asyncScheduler, true))).toBe(
        'a 39ms b 39ms c 19ms #',
        undefined,
        new TimeoutError('request', 100),
      );
    });
  });

  it('a completed source leaves no deadline scheduled', () => {
    ts.run(({ cold, expectObservable, flush }) => {
      expectObservable(
        cold('5ms a|').pipe(modelDeadlines({ firstEventMs: 30, idleMs: 50, requestMs: 100 }, asyncScheduler, true)),
      ).toBe('5ms a|');
      ts.schedule(() => expect(ts.actions).toEqual([]), 7);
      flush();
    });
  });
});

describe('modelDeadlines (non-streaming requests: row 2)', () => {
  it('only the whole-request deadline applies', () => {
    ts.run(({ cold, expectObservable }) => {
      const d = { firstEventMs: 10, idleMs: 10, requestMs: 300 };
      expectObservable(cold('200ms (r|)').pipe(modelDeadlines(d, asyncScheduler, false))).toBe('200ms (r|)');
      expectObservable(cold('400ms (r|)').pipe(modelDeadlines(d, asyncScheduler, false))).toBe(
        '300ms #',
        undefined,
        new TimeoutError('request', 300),
      );
    });
  });

  it('no deadlines: the source is returned as is', () => {
    const src = cold$();
    expect(modelDeadlines<number>(undefined, asyncScheduler, true)(src)).toBe(src);
    expect(modelDeadlines<number>({ idleMs: 5 }, asyncScheduler, false)(src)).toBe(src);
  });
});

function cold$() {
  return ts.createColdObservable<number>('a|', { a: 1 });
}
