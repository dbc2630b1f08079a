/**
 * Deadlines in the engine (docs/recovery.md, "one idle timer"): an idle stall is a retryable
 * TimeoutError (not a cancel); the run deadline is a cancel with reason
 * deadline (no fallback); the idle deadline costs one timer, not one per chunk.
 * Virtual time, not in run mode: the scheduler is injected.
 */
import {
  NEVER,
  concat,
  interval,
  map,
  of,
  take,
  timeout,
  type SchedulerAction,
  type SchedulerLike,
  type Subscription,
} from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { beforeEach, describe, expect, it } from 'vitest';
import { CancelSignal } from '../src/cancel/index.js';
import { defineAgent } from '../src/engine/define-agent.js';
import { run } from '../src/engine/run.js';
import { ModelCallError, TimeoutError, serializeError } from '../src/errors.js';
import type { RunEvent } from '../src/events.js';
import type { ModelEvent } from '../src/model/types.js';
import { scriptedModel, type ScriptedStep } from '../src/testing/index.js';

let ts: TestScheduler;
beforeEach(() => {
  ts = new TestScheduler((actual, expected) => expect(actual).toEqual(expected));
  ts.maxFrames = Number.POSITIVE_INFINITY;
});

function runAll(steps: (ScriptedStep | string)[], options: Parameters<typeof run>[2] = {}, fallbackSteps?: string[]) {
  const model = scriptedModel(steps, { id: 'primary', scheduler: ts });
  const fallback = fallbackSteps ? scriptedModel(fallbackSteps, { id: 'fallback', scheduler: ts }) : undefined;
  const agent = defineAgent({ name: 'a', instructions: '', model, ...(fallback ? { fallbackModel: fallback } : {}) });
  const events: RunEvent[] = [];
  run(agent, 'q', { scheduler: ts, random: () => 0.5, ...options }).subscribe((e) => events.push(e));
  ts.flush();
  return { model, fallback, events };
}

describe('an idle stall is a deadline, retried like any transient error', () => {
  it('idle stall → TimeoutError → retry_scheduled with it → the retry succeeds', () => {
    const { model, events } = runAll([{ hold: NEVER }, 'ok'], {
      deadlines: { idleMs: 200 },
      retry: { initialDelayMs: 100 },
    });
    expect(events.filter((e) => e.type === 'retry_scheduled')).toMatchObject([
      { at: 200, attempt: 2, delayMs: 50, error: serializeError(new TimeoutError('idle', 200)) },
    ]);
    expect(events.at(-1)).toMatchObject({ type: 'run_completed', at: 250, output: 'ok' });
    expect(model.calls.map((c) => c.tornDown)).toEqual([true, false]);
  });

  it('a stall after the first delta is a broken stream: rescued without streaming, where the idle limit does not apply', () => {
    const { model, events } = runAll(
      [
        { text: ['a', 'b'], hold: NEVER },
        { text: 'ab', delayMs: 1000 },
      ],
      { deadlines: { idleMs: 200 } },
    );
    expect(
      events
        .filter((e) => e.type === 'model_request_started')
        .map((e) => [e.at, e.type === 'model_request_started' && e.stream]),
    ).toEqual([
      [0, true],
      [200, false],
    ]);
    expect(events.at(-1)).toMatchObject({ type: 'run_completed', at: 1200, output: 'ab' });
    expect(model.requests.map((r) => r.stream)).toEqual([true, false]);
  });

  it('a cancel during the stall is not a timeout: run_cancelled, no retry', () => {
    const cancel = new CancelSignal();
    ts.schedule(() => cancel.cancel('stop'), 150);
    const { model, events } = runAll([{ hold: NEVER }, 'ok'], { cancel, deadlines: { idleMs: 200 } });
    expect(events.map((e) => e.type)).toEqual([
      'run_started',
      'turn_started',
      'model_request_started',
      'run_cancelled',
    ]);
    expect(events.at(-1)).toMatchObject({ at: 150, reason: 'stop', phase: 'model_request' });
    expect(model.calls.length).toBe(1);
    expect(ts.actions).toEqual([]);
  });
});

describe('the run deadline is a cancel (reason deadline), never a failure', () => {
  it('mid-retry (during the backoff sleep): run_cancelled { type: deadline }, no retry starts, no fallback', () => {
    const down = new ModelCallError('overloaded', { status: 529, retryable: true });
    const { model, fallback, events } = runAll(
      [{ delayMs: 100, error: down }, 'ok'],
      { deadlines: { runMs: 300 }, retry: { maxRetries: 3, initialDelayMs: 1000 } },
      ['fallback answer'],
    );
    expect(events.map((e) => e.type)).toEqual([
      'run_started',
      'turn_started',
      'model_request_started',
      'retry_scheduled',
      'run_cancelled',
    ]);
    expect(events.at(-1)).toMatchObject({ at: 300, reason: { type: 'deadline' }, phase: 'backoff' });
    expect(model.calls.length).toBe(1);
    expect(fallback!.calls.length).toBe(0);
    expect(ts.actions).toEqual([]);
  });

  it('mid-request of the retry: the request is torn down, no fallback', () => {
    const down = new ModelCallError('overloaded', { status: 529, retryable: true });
    const { model, fallback, events } = runAll(
      [{ error: down }, { hold: NEVER }],
      { deadlines: { runMs: 300 }, retry: { maxRetries: 3, initialDelayMs: 100 } },
      ['fallback answer'],
    );
    expect(events.at(-1)).toMatchObject({
      type: 'run_cancelled',
      at: 300,
      reason: { type: 'deadline' },
      phase: 'model_request',
    });
    expect(events.some((e) => e.type === 'fallback_activated')).toBe(false);
    expect(model.calls.map((c) => c.tornDown)).toEqual([false, true]);
    expect(fallback!.calls.length).toBe(0);
  });
});

/** A scheduler that counts every action it schedules, re-arms (`this.schedule` inside an action) included. */
function counting(inner: SchedulerLike): { scheduler: SchedulerLike; count: () => number } {
  let n = 0;
  const wrap = (work: (this: SchedulerAction<unknown>, state?: unknown) => void) =>
    function (this: SchedulerAction<unknown>, state?: unknown): void {
      const counted = Object.create(this) as SchedulerAction<unknown>;
      counted.schedule = (s?: unknown, d?: number): Subscription => (n++, this.schedule(s, d));
      work.call(counted, state);
    };
  const scheduler = {
    now: () => inner.now(),
    schedule: (work: any, delay?: number, state?: unknown) => (n++, inner.schedule(wrap(work), delay, state)),
  } as SchedulerLike;
  return { scheduler, count: () => n };
}

describe('the idle deadline costs one timer and a timestamp, not a timer per chunk', () => {
  /**
   * 1 000 deltas, one per virtual ms (on the model's own clock: the same TestScheduler, uncounted), then the response.
   */
  const stream$ = () =>
    concat(
      interval(1, ts).pipe(
        take(1000),
        map((): ModelEvent => ({ type: 'text_delta', delta: 'x' })),
      ),
      of<ModelEvent>({ type: 'response', response: { text: 'x'.repeat(1000), toolCalls: [], finishReason: 'stop' } }),
    );

  it('a 1 000-chunk stream schedules a constant handful of engine actions', () => {
    const { scheduler, count } = counting(ts);
    const model = scriptedModel([{ events: stream$ }]);
    const agent = defineAgent({ name: 'a', instructions: '', model });
    const events: RunEvent[] = [];
    run(agent, 'q', { scheduler, deadlines: { firstEventMs: 50, idleMs: 100, requestMs: 60_000 } }).subscribe((e) =>
      events.push(e),
    );
    ts.flush();
    expect(events.filter((e) => e.type === 'text_delta').length).toBe(1000);
    expect(events.at(-1)).toMatchObject({ type: 'run_completed', at: 1000 });
    // A constant: 3 stage hops (turn entry, model request, outcome) + the request timer + the
    // silence timer, armed at 0 (first event, 50) and re-armed at 1 (idle, 100) on the first
    // chunk, then re-armed on each expiry (~every 100 ms over 1 000 ms). Per chunk it would be >= 1 000.
    expect(count()).toBe(15);
  });

  it('the counter is sound: a per-chunk timeout (rxjs timeout({ each })) on the same stream schedules > 1 000', () => {
    const { scheduler, count } = counting(ts);
    stream$()
      .pipe(timeout({ each: 100, scheduler }))
      .subscribe();
    ts.flush();
    expect(count()).toBeGreaterThan(1000);
  });
});
