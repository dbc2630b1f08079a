/**
 * "Fallback behind a breaker" (docs/recovery.md) and guarantee 4: cancelled
 * is not failed. N failures →
 * open → the fallback serves → half-open probe after the cool-down → closed;
 * the same scenario with cancels leaves the breaker closed and the fallback
 * uncalled. Virtual time, not in run mode: the scheduler is injected.
 */
import { NEVER } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { beforeEach, describe, expect, it } from 'vitest';
import { CancelSignal } from '../src/cancel/index.js';
import { CircuitBreaker, breakerFor } from '../src/engine/recovery/breaker.js';
import { defineAgent } from '../src/engine/define-agent.js';
import { run } from '../src/engine/run.js';
import { ModelCallError, TimeoutError } from '../src/errors.js';
import type { RunEvent } from '../src/events.js';
import { scriptedModel, type ScriptedStep } from '../src/testing/index.js';

let ts: TestScheduler;
beforeEach(() => {
  ts = new TestScheduler((actual, expected) => expect(actual).toEqual(expected));
  ts.maxFrames = Number.POSITIVE_INFINITY; // not in run mode: lift the 750-frame default
});

const down = new ModelCallError('service unavailable', { status: 503, retryable: true });
const BREAKER = { failureThreshold: 3, cooldownMs: 10_000 };

function setup(primarySteps: (ScriptedStep | string)[], fallbackSteps: (ScriptedStep | string)[]) {
  const primary = scriptedModel(primarySteps, { id: 'primary', scheduler: ts });
  const fallback = scriptedModel(fallbackSteps, { id: 'fallback', scheduler: ts });
  const agent = defineAgent({ name: 'a', instructions: '', model: primary, fallbackModel: fallback, breaker: BREAKER });
  return { primary, fallback, agent, breaker: breakerFor(primary, BREAKER) };
}

/** One run to its end (flushing virtual time); its events without the bookkeeping fields. */
function runOnce(
  agent: ReturnType<typeof defineAgent>,
  opts: { cancel?: CancelSignal; cancelAt?: number } = {},
): RunEvent[] {
  const events: RunEvent[] = [];
  run(agent, 'q', { scheduler: ts, retry: false, ...(opts.cancel ? { cancel: opts.cancel } : {}) }).subscribe((e) =>
    events.push(e),
  );
  if (opts.cancel && opts.cancelAt !== undefined) ts.schedule(() => opts.cancel!.cancel('user stop'), opts.cancelAt);
  ts.flush();
  return events;
}
const pick = (events: RunEvent[]) =>
  events.flatMap((e) =>
    e.type === 'fallback_activated'
      ? [`fallback:${e.reason}`]
      : e.type === 'model_request_started'
        ? [`request:${e.model}`]
        : e.type === 'run_completed'
          ? [`completed:${e.output}`]
          : e.type === 'run_cancelled'
            ? [`cancelled:${e.phase}`]
            : e.type === 'retry_scheduled'
              ? ['retry']
              : [],
  );

describe('breaker: failures open it, the fallback serves, a half-open probe closes it', () => {
  it('3 failures → open → circuit_open fallback → probe after the cool-down → closed', () => {
    const { primary, fallback, agent, breaker } = setup(
      [{ error: down }, { error: down }, { error: down }, 'primary is back', 'primary again'],
      ['fb 1', 'fb 2', 'fb 3', 'fb 4'],
    );
    for (let i = 1; i <= 3; i++) {
      expect(pick(runOnce(agent))).toEqual([
        'request:primary',
        'fallback:service unavailable',
        'request:fallback',
        `completed:fb ${i}`,
      ]);
    }
    expect([breaker.state, breaker.failures]).toEqual(['open', 3]);
    expect(pick(runOnce(agent))).toEqual(['fallback:circuit_open', 'request:fallback', 'completed:fb 4']);
    expect(primary.calls.length).toBe(3);

    ts.schedule(() => {}, BREAKER.cooldownMs); // the cool-down passes
    ts.flush();
    expect(pick(runOnce(agent))).toEqual(['request:primary', 'completed:primary is back']);
    expect([breaker.state, breaker.failures]).toEqual(['closed', 0]);
    expect(pick(runOnce(agent))).toEqual(['request:primary', 'completed:primary again']);
    expect(fallback.calls.length).toBe(4);
  });

  it('a failed probe re-opens it for another cool-down', () => {
    const { agent, breaker } = setup(
      [{ error: down }, { error: down }, { error: down }, { error: down }],
      ['1', '2', '3', '4', '5'],
    );
    for (let i = 0; i < 3; i++) runOnce(agent);
    ts.schedule(() => {}, BREAKER.cooldownMs);
    ts.flush();
    const opened = ts.now();
    expect(pick(runOnce(agent))).toEqual([
      'request:primary',
      'fallback:service unavailable',
      'request:fallback',
      'completed:4',
    ]);
    expect(breaker.state).toBe('open');
    expect(breaker.waitMs(opened)).toBe(BREAKER.cooldownMs);
    expect(pick(runOnce(agent))).toEqual(['fallback:circuit_open', 'request:fallback', 'completed:5']);
  });

  it('failures are consecutive: a success in between resets the count', () => {
    const { agent, breaker } = setup(
      [{ error: down }, { error: down }, 'ok', { error: down }, { error: down }],
      ['1', '2', '3', '4'],
    );
    for (let i = 0; i < 5; i++) runOnce(agent);
    expect([breaker.state, breaker.failures]).toEqual(['closed', 2]);
  });

  it('timeouts count as failures (a timeout is not a cancel)', () => {
    const stall: ScriptedStep = { hold: NEVER };
    const primary = scriptedModel([stall, stall, stall], { id: 'primary', scheduler: ts });
    const fallback = scriptedModel(['1', '2', '3'], { id: 'fallback', scheduler: ts });
    const agent = defineAgent({
      name: 'a',
      instructions: '',
      model: primary,
      fallbackModel: fallback,
      breaker: BREAKER,
    });
    for (let i = 0; i < 3; i++) {
      const events: RunEvent[] = [];
      run(agent, 'q', { scheduler: ts, retry: false, deadlines: { firstEventMs: 50 } }).subscribe((e) =>
        events.push(e),
      );
      ts.flush();
      expect(events.find((e) => e.type === 'fallback_activated')).toMatchObject({
        reason: new TimeoutError('first_event', 50).message,
      });
    }
    expect(breakerFor(primary, undefined).state).toBe('open');
  });
});

describe('guarantee 4: cancels never feed the breaker and never trigger the fallback', () => {
  it('the same scenario with cancels instead of failures leaves the breaker closed and the fallback uncalled', () => {
    const { primary, fallback, agent, breaker } = setup(
      [{ hold: NEVER }, { hold: NEVER }, { hold: NEVER }, 'primary ok'],
      ['fb'],
    );
    for (let i = 0; i < 3; i++) {
      const cancel = new CancelSignal();
      expect(pick(runOnce(agent, { cancel, cancelAt: 100 }))).toEqual(['request:primary', 'cancelled:model_request']);
    }
    expect([breaker.state, breaker.failures]).toEqual(['closed', 0]);
    expect(pick(runOnce(agent))).toEqual(['request:primary', 'completed:primary ok']);
    expect(fallback.calls.length).toBe(0);
    expect(primary.calls.map((c) => c.tornDown)).toEqual([true, true, true, false]);
  });

  it('a run deadline (a cancel with reason deadline) is not a failure either', () => {
    const { fallback, agent, breaker } = setup([{ hold: NEVER }, { hold: NEVER }, { hold: NEVER }], ['fb']);
    for (let i = 0; i < 3; i++) {
      const events: RunEvent[] = [];
      run(agent, 'q', { scheduler: ts, deadlines: { runMs: 100 } }).subscribe((e) => events.push(e));
      ts.flush();
      expect(events.at(-1)).toMatchObject({
        type: 'run_cancelled',
        reason: { type: 'deadline' },
        phase: 'model_request',
      });
    }
    expect([breaker.state, breaker.failures, fallback.calls.length]).toEqual(['closed', 0, 0]);
  });

  it('a cancelled half-open probe is handed back: the next run probes (the breaker is not stuck)', () => {
    const { primary, agent, breaker } = setup(
      [{ error: down }, { error: down }, { error: down }, { hold: NEVER }, 'back'],
      ['1', '2', '3'],
    );
    for (let i = 0; i < 3; i++) runOnce(agent);
    ts.schedule(() => {}, BREAKER.cooldownMs);
    ts.flush();
    expect(pick(runOnce(agent, { cancel: new CancelSignal(), cancelAt: 50 }))).toEqual([
      'request:primary',
      'cancelled:model_request',
    ]);
    expect([breaker.state, breaker.waitMs(ts.now())]).toEqual(['half_open', 0]);
    expect(pick(runOnce(agent))).toEqual(['request:primary', 'completed:back']);
    expect(breaker.state).toBe('closed');
    expect(primary.calls.length).toBe(5);
  });
});

describe('CircuitBreaker', () => {
  it('closed → open at the threshold → half_open after the cool-down, one probe at a time → closed', () => {
    const b = new CircuitBreaker(2, 100);
    expect(b.allow(0)).toBe(true);
    b.failure(0);
    expect(b.state).toBe('closed');
    b.failure(10);
    expect([b.state, b.allow(50), b.waitMs(50)]).toEqual(['open', false, 60]);
    expect([b.allow(110), b.state, b.allow(110), b.waitMs(110)]).toEqual([true, 'half_open', false, undefined]);
    b.release();
    expect([b.waitMs(111), b.allow(111)]).toEqual([0, true]);
    b.success();
    expect([b.state, b.failures, b.allow(112)]).toEqual(['closed', 0, true]);
  });

  it('changed$ tells waiters about every outcome and released probe', () => {
    const b = new CircuitBreaker(1, 100);
    let n = 0;
    const sub = b.changed$.subscribe(() => n++);
    b.failure(0);
    b.allow(100);
    b.release();
    b.release(); // nothing to release
    b.success();
    sub.unsubscribe();
    expect(n).toBe(3);
  });

  it('one breaker per provider instance; the first explicit options configure it', () => {
    const a = scriptedModel([]);
    const b = scriptedModel([]);
    const first = breakerFor(a, undefined);
    expect([first.failureThreshold, first.cooldownMs]).toEqual([3, 30_000]);
    expect(breakerFor(a, { failureThreshold: 9 })).toBe(first);
    expect(breakerFor(a, { failureThreshold: 5, cooldownMs: 1 })).toBe(first);
    expect([first.failureThreshold, first.cooldownMs]).toEqual([9, 30_000]);
    expect(breakerFor(b, undefined)).not.toBe(first);
  });
});
