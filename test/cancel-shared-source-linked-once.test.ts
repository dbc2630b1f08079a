import { getEventListeners } from 'node:events';
import { NEVER, Observable, Subject, VirtualTimeScheduler, map, timer } from 'rxjs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { UNREADABLE_REASON } from '../src/cancel/index.js';
import { CancelSignal, defineAgent, run, type RunEvent, type RunOptions, type TerminalEvent } from '../src/index.js';
import { collectEvents, gate, scriptedModel, type Gate } from '../src/testing/index.js';

/**
 * A shared external cancel source is linked once: however many live runs are
 * given the same AbortSignal (or the same `cancel$` Observable), loopctl adds
 * one 'abort' listener to it (subscribes to it once), removes it when the last
 * of those runs ends, and a cancel from it still ends every run with its
 * reason. Reading `signal.reason` never throws out of loopctl.
 */
const warnings: Error[] = [];
const uncaught: unknown[] = [];
const onWarning = (w: Error): void => void warnings.push(w);
const onUncaught = (err: unknown): void => void uncaught.push(err);
beforeEach(() => {
  warnings.length = 0;
  uncaught.length = 0;
  process.on('warning', onWarning);
  process.on('uncaughtException', onUncaught);
});
afterEach(() => {
  process.off('warning', onWarning);
  process.off('uncaughtException', onUncaught);
});

const nextTask = (): Promise<void> => new Promise((r) => setImmediate(r));
const abortListeners = (signal: AbortSignal): number => getEventListeners(signal, 'abort').length;
const terminal = (events: RunEvent[]): TerminalEvent => events.at(-1) as TerminalEvent;

/** One run whose model answers 'done' once `answer` opens (never, without a gate). */
function liveRun(options: RunOptions, answer?: Gate): Promise<RunEvent[]> {
  const model = scriptedModel([{ gate: answer ? answer.promise : NEVER, text: 'done' }]);
  return collectEvents(run(defineAgent({ name: 'a', instructions: '', model }), 'go', options));
}

describe('a shared AbortSignal is linked once', () => {
  it(
    '20 concurrent runs given one AbortSignal add one abort listener, print no warning, ' +
      'and all end run_cancelled with its reason when it aborts',
    async () => {
      const controller = new AbortController();
      const { signal } = controller;
      const runs = Array.from({ length: 20 }, () => liveRun({ signal }));
      await nextTask(); // every run is waiting on its model request; a warning would have been emitted by now
      expect(abortListeners(signal)).toBe(1);
      expect(warnings.map((w) => `${w.name}: ${w.message}`)).toEqual([]);

      const reason = { type: 'shutdown' };
      controller.abort(reason);
      const ends = (await Promise.all(runs)).map(terminal);
      expect(ends.map((e) => [e.type, e.type === 'run_cancelled' && e.phase])).toEqual(
        Array.from({ length: 20 }, () => ['run_cancelled', 'model_request']),
      );
      expect(ends.every((e) => e.type === 'run_cancelled' && e.reason === reason)).toBe(true);
      expect(abortListeners(signal)).toBe(0);
      await nextTask();
      expect(warnings).toEqual([]);
      expect(uncaught).toEqual([]);
    },
  );

  it('the one listener stays while any of the runs lives and is removed when the last one ends', async () => {
    const controller = new AbortController();
    const { signal } = controller;
    const first = gate();
    const second = gate();
    const early = Array.from({ length: 10 }, () => liveRun({ signal }, first));
    const late = Array.from({ length: 10 }, () => liveRun({ signal }, second));
    await nextTask();
    expect(abortListeners(signal)).toBe(1);
    first.open();
    expect((await Promise.all(early)).map((e) => terminal(e).type)).toEqual(Array(10).fill('run_completed'));
    expect(abortListeners(signal)).toBe(1);
    second.open();
    expect((await Promise.all(late)).map((e) => terminal(e).type)).toEqual(Array(10).fill('run_completed'));
    expect(abortListeners(signal)).toBe(0);
    const again = liveRun({ signal });
    expect(abortListeners(signal)).toBe(1); // linked again by the next run
    controller.abort('stop');
    expect(terminal(await again)).toMatchObject({ type: 'run_cancelled', reason: 'stop' });
    expect(abortListeners(signal)).toBe(0);
  });

  it('a signal already aborted cancels each run at turn_entry without adding a listener', async () => {
    const reason = new Error('stopped before');
    const signal = AbortSignal.abort(reason);
    const ends = (await Promise.all([liveRun({ signal }), liveRun({ signal })])).map(terminal);
    expect(
      ends.map((e) => [e.type, e.type === 'run_cancelled' && e.phase, e.type === 'run_cancelled' && e.reason]),
    ).toEqual([
      ['run_cancelled', 'turn_entry', reason],
      ['run_cancelled', 'turn_entry', reason],
    ]);
    expect(abortListeners(signal)).toBe(0);
  });
});

describe('a shared cancel$ Observable is subscribed once', () => {
  it(
    '20 concurrent runs given one cancel$ subscribe to it once; ' + 'its first value ends all 20 with that reason',
    async () => {
      const source = new Subject<unknown>();
      let subscribed = 0;
      let unsubscribed = 0;
      const cancel$ = new Observable<unknown>((subscriber) => {
        subscribed++;
        const inner = source.subscribe(subscriber);
        return () => {
          unsubscribed++;
          inner.unsubscribe();
        };
      });
      const runs = Array.from({ length: 20 }, () => liveRun({ cancel$ }));
      await nextTask();
      expect([subscribed, unsubscribed]).toEqual([1, 0]);

      const reason = { type: 'shutdown' };
      source.next(reason);
      const ends = (await Promise.all(runs)).map(terminal);
      expect(ends.map((e) => e.type)).toEqual(Array(20).fill('run_cancelled'));
      expect(ends.every((e) => e.type === 'run_cancelled' && e.reason === reason)).toBe(true);
      expect([subscribed, unsubscribed, source.observed]).toEqual([1, 1, false]);

      // A later run subscribes afresh: a hot source's earlier value is not seen.
      const later = liveRun({ cancel$ });
      await nextTask();
      expect([subscribed, unsubscribed]).toEqual([2, 1]);
      source.next('second');
      expect(terminal(await later)).toMatchObject({ type: 'run_cancelled', reason: 'second' });
      expect([subscribed, unsubscribed, source.observed]).toEqual([2, 2, false]);
    },
  );

  it('is unsubscribed when the last run using it ends, not before', async () => {
    const source = new Subject<unknown>();
    const first = gate();
    const second = gate();
    const early = liveRun({ cancel$: source }, first);
    const late = liveRun({ cancel$: source }, second);
    expect(source.observers.length).toBe(1);
    first.open();
    expect(terminal(await early).type).toBe('run_completed');
    expect(source.observers.length).toBe(1);
    second.open();
    expect(terminal(await late).type).toBe('run_completed');
    expect(source.observed).toBe(false);
  });

  it('a cold cancel$ starts when the first run using it subscribes; a run started later shares it', () => {
    const scheduler = new VirtualTimeScheduler();
    const cancel$ = timer(1_000, scheduler).pipe(map(() => 'time is up'));
    const ends: (TerminalEvent | undefined)[] = [];
    const start = (i: number): void => {
      const model = scriptedModel([{ gate: NEVER, text: 'never' }], { scheduler });
      run(defineAgent({ name: 'a', instructions: '', model }), 'go', { cancel$, scheduler }).subscribe((e) => {
        if (e.type === 'run_cancelled' || e.type === 'run_completed' || e.type === 'run_failed') ends[i] = e;
      });
    };
    start(0);
    scheduler.schedule(() => start(1), 500);
    scheduler.flush();
    expect(ends.map((e) => e && [e.type, e.at, e.type === 'run_cancelled' && e.reason])).toEqual([
      ['run_cancelled', 1_000, 'time is up'],
      ['run_cancelled', 1_000, 'time is up'],
    ]);
  });

  it('an erroring shared cancel$ cancels nothing; the next run subscribes afresh', async () => {
    const source = new Subject<unknown>();
    const answer = gate();
    const live = [liveRun({ cancel$: source }, answer), liveRun({ cancel$: source }, answer)];
    source.error(new Error('cancel$ broke'));
    answer.open();
    expect((await Promise.all(live)).map((e) => terminal(e).type)).toEqual(['run_completed', 'run_completed']);
    const fresh = new Subject<unknown>();
    let subscribes = 0;
    const cancel$ = new Observable<unknown>((s) => (subscribes++, fresh.subscribe(s)));
    const a = liveRun({ cancel$ }, answer);
    const b = liveRun({ cancel$ }, answer);
    expect(subscribes).toBe(1);
    expect((await Promise.all([a, b])).map((e) => terminal(e).type)).toEqual(['run_completed', 'run_completed']);
    expect(fresh.observed).toBe(false);
    expect(uncaught).toEqual([]);
  });
});

describe('reading signal.reason is total', () => {
  /** An AbortSignal whose `reason` getter throws (a hostile subclass or a patched instance). */
  function hostileSignal(aborted: boolean): { signal: AbortSignal; abort: () => void } {
    const controller = new AbortController();
    if (aborted) controller.abort();
    Object.defineProperty(controller.signal, 'reason', {
      get() {
        throw new Error('no reason for you');
      },
    });
    return { signal: controller.signal, abort: () => controller.abort() };
  }

  it('an abort whose reason cannot be read ends every run run_cancelled with UNREADABLE_REASON', async () => {
    const { signal, abort } = hostileSignal(false);
    const runs = [liveRun({ signal }), liveRun({ signal })];
    await nextTask();
    abort();
    const ends = (await Promise.all(runs)).map(terminal);
    expect(ends.map((e) => [e.type, e.type === 'run_cancelled' && e.reason])).toEqual([
      ['run_cancelled', { type: 'unreadable_reason' }],
      ['run_cancelled', { type: 'unreadable_reason' }],
    ]);
    expect(ends.every((e) => e.type === 'run_cancelled' && e.reason === UNREADABLE_REASON)).toBe(true);
    expect(Object.isFrozen(UNREADABLE_REASON)).toBe(true);
    expect(abortListeners(signal)).toBe(0);
    await nextTask();
    expect(uncaught).toEqual([]);
  });

  it('an already aborted signal whose reason cannot be read cancels at turn_entry with the placeholder', async () => {
    const { signal } = hostileSignal(true);
    const events = await liveRun({ signal });
    expect(events.map((e) => e.type)).toEqual(['run_started', 'run_cancelled']);
    expect(terminal(events)).toMatchObject({ phase: 'turn_entry', reason: { type: 'unreadable_reason' } });
    const end = terminal(events);
    expect(end.type === 'run_cancelled' && end.reason).toBe(UNREADABLE_REASON);
  });

  it('CancelSignal.from reads it the same way', () => {
    expect(CancelSignal.from(hostileSignal(true).signal).reason).toEqual({ type: 'unreadable_reason' });
    const live = hostileSignal(false);
    const s = CancelSignal.from(live.signal);
    live.abort();
    expect(s.reason).toBe(UNREADABLE_REASON);
  });
});
