/**
 * With default options (no `deadlines`, no `retry`): a model that stalls is bounded.
 * - A server that never answers (headers, then nothing): each streamed attempt ends at
 *   DEFAULTS.deadlines.firstEventMs, is retried with the default backoff, and the run fails
 *   `model_error` with the TimeoutError in under 200 s, all in virtual time.
 * - A stream that stalls after its first chunk ends at DEFAULTS.deadlines.idleMs and is recovered like
 *   any broken stream (rescued without streaming); a rescue that never answers ends at
 *   DEFAULTS.deadlines.requestMs and is retried.
 * - `false` turns a deadline off.
 */
import { NEVER, Observable, VirtualTimeScheduler } from 'rxjs';
import { describe, expect, it } from 'vitest';
import {
  DEFAULTS,
  TimeoutError,
  defineAgent,
  run,
  serializeError,
  type ModelEvent,
  type ModelProvider,
  type ModelRequest,
  type RunEvent,
} from '../src/index.js';
import { scriptedModel } from '../src/testing/index.js';

/** A provider whose every request gets no event at all (a server that sent its headers and went silent). */
function silentModel(): ModelProvider & { requests: ModelRequest[]; open: () => number } {
  const requests: ModelRequest[] = [];
  let open = 0;
  return {
    id: 'silent',
    requests,
    open: () => open,
    call: (request) =>
      new Observable<ModelEvent>(() => {
        requests.push(request);
        open++;
        return () => void open--;
      }),
  };
}

const RANDOM = 0.5;

describe('with defaults, a server that never answers ends the run in under 200 s', () => {
  it('3 attempts of firstEventMs each, 2 backoffs of the default jitter, then run_failed{model_error} with the TimeoutError', () => {
    const scheduler = new VirtualTimeScheduler();
    const model = silentModel();
    const agent = defineAgent({ name: 'a', instructions: '', model });
    const events: RunEvent[] = [];
    run(agent, 'q', { scheduler, random: () => RANDOM }).subscribe((e) => events.push(e));
    scheduler.flush();

    const { firstEventMs } = DEFAULTS.deadlines;
    const { initialDelayMs, multiplier, maxDelayMs } = DEFAULTS.retry;
    const delay1 = Math.floor(RANDOM * Math.min(maxDelayMs, initialDelayMs)); // 250
    const delay2 = Math.floor(RANDOM * Math.min(maxDelayMs, initialDelayMs * multiplier)); // 500
    const start2 = firstEventMs + delay1;
    const start3 = start2 + firstEventMs + delay2;
    const end = start3 + firstEventMs;
    expect([delay1, delay2, end]).toEqual([250, 500, 180_750]);
    expect(end).toBeLessThan(200_000);

    const timeout = serializeError(new TimeoutError('first_event', firstEventMs));
    expect(events.map((e) => e.type)).toEqual([
      'run_started',
      'turn_started',
      'model_request_started',
      'retry_scheduled',
      'model_request_started',
      'retry_scheduled',
      'model_request_started',
      'run_failed',
    ]);
    expect(events.slice(2)).toMatchObject([
      { type: 'model_request_started', at: 0, attempt: 1, stream: true },
      { type: 'retry_scheduled', at: firstEventMs, attempt: 2, delayMs: delay1, error: timeout },
      { type: 'model_request_started', at: start2, attempt: 2, stream: true },
      { type: 'retry_scheduled', at: start2 + firstEventMs, attempt: 3, delayMs: delay2, error: timeout },
      { type: 'model_request_started', at: start3, attempt: 3, stream: true },
      { type: 'run_failed', at: end, stopReason: 'model_error', error: timeout },
    ]);
    expect(model.requests).toHaveLength(DEFAULTS.retry.maxRetries + 1);
    // requestMs is for non-streamed requests
    expect(model.requests.map((r) => r.timeoutMs)).toEqual([undefined, undefined, undefined]);
    expect(model.open()).toBe(0);
    expect(scheduler.actions).toHaveLength(0);
  });

  it('a non-streamed request that never answers ends at DEFAULTS.deadlines.requestMs, and the provider is told that deadline', () => {
    const scheduler = new VirtualTimeScheduler();
    const model = silentModel();
    const events: RunEvent[] = [];
    const agent = defineAgent({ name: 'a', instructions: '', model });
    run(agent, 'q', { scheduler, stream: false, retry: false }).subscribe((e) => events.push(e));
    scheduler.flush();
    expect(events.at(-1)).toMatchObject({
      type: 'run_failed',
      at: DEFAULTS.deadlines.requestMs,
      stopReason: 'model_error',
      error: serializeError(new TimeoutError('request', DEFAULTS.deadlines.requestMs)),
    });
    expect(model.requests.map((r) => r.timeoutMs)).toEqual([DEFAULTS.deadlines.requestMs]);
  });
});

describe('a stream that stalls after its first chunk', () => {
  it('ends at DEFAULTS.deadlines.idleMs and is rescued without streaming, like any broken stream', () => {
    const scheduler = new VirtualTimeScheduler();
    const model = scriptedModel([{ text: ['Hel'], hold: NEVER }, { text: 'Hello' }], { scheduler });
    const events: RunEvent[] = [];
    run(defineAgent({ name: 'a', instructions: '', model }), 'q', { scheduler }).subscribe((e) => events.push(e));
    scheduler.flush();
    const { idleMs, requestMs } = DEFAULTS.deadlines;
    expect(events.filter((e) => e.type === 'model_request_started')).toMatchObject([
      { at: 0, attempt: 1, stream: true },
      { at: idleMs, attempt: 2, stream: false },
    ]);
    expect(events.at(-1)).toMatchObject({ type: 'run_completed', at: idleMs, output: 'Hello' });
    expect(model.calls.map((c) => c.tornDown)).toEqual([true, false]);
    // the rescue has the request deadline
    expect(model.requests.map((r) => r.timeoutMs)).toEqual([undefined, requestMs]);
  });

  it('a rescue that never answers ends at requestMs and is retried like any transient fault', () => {
    const scheduler = new VirtualTimeScheduler();
    const model = scriptedModel([{ text: ['Hel'], hold: NEVER }, { hold: NEVER }, { text: 'Hello' }], { scheduler });
    const events: RunEvent[] = [];
    run(defineAgent({ name: 'a', instructions: '', model }), 'q', { scheduler, random: () => RANDOM }).subscribe((e) =>
      events.push(e),
    );
    scheduler.flush();
    const { idleMs, requestMs } = DEFAULTS.deadlines;
    const delay1 = Math.floor(RANDOM * DEFAULTS.retry.initialDelayMs);
    expect(events.filter((e) => e.type === 'model_request_started' || e.type === 'retry_scheduled')).toMatchObject([
      { type: 'model_request_started', at: 0, attempt: 1, stream: true },
      { type: 'model_request_started', at: idleMs, attempt: 2, stream: false },
      {
        type: 'retry_scheduled',
        at: idleMs + requestMs,
        attempt: 3,
        delayMs: delay1,
        error: serializeError(new TimeoutError('request', requestMs)),
      },
      { type: 'model_request_started', at: idleMs + requestMs + delay1, attempt: 3, stream: true },
    ]);
    expect(events.at(-1)).toMatchObject({ type: 'run_completed', at: idleMs + requestMs + delay1, output: 'Hello' });
  });
});

describe('false turns a default deadline off', () => {
  it('firstEventMs: false: a silent stream is not bounded (nothing scheduled); the unsubscribe ends it', () => {
    const scheduler = new VirtualTimeScheduler();
    const model = silentModel();
    const events: RunEvent[] = [];
    const sub = run(defineAgent({ name: 'a', instructions: '', model }), 'q', {
      scheduler,
      deadlines: { firstEventMs: false },
    }).subscribe((e) => events.push(e));
    scheduler.flush();
    expect(events.map((e) => e.type)).toEqual(['run_started', 'turn_started', 'model_request_started']);
    expect(scheduler.actions).toHaveLength(0);
    expect(model.open()).toBe(1);
    sub.unsubscribe();
    expect(model.open()).toBe(0);
  });

  it('idleMs: false: a stream stalled after its first chunk is not bounded', () => {
    const scheduler = new VirtualTimeScheduler();
    const model = scriptedModel([{ text: ['Hel'], hold: NEVER }], { scheduler });
    const events: RunEvent[] = [];
    const sub = run(defineAgent({ name: 'a', instructions: '', model }), 'q', {
      scheduler,
      deadlines: { idleMs: false },
    }).subscribe((e) => events.push(e));
    scheduler.flush();
    expect(events.map((e) => e.type)).toEqual(['run_started', 'turn_started', 'model_request_started', 'text_delta']);
    expect(scheduler.actions).toHaveLength(0);
    sub.unsubscribe();
  });

  it('requestMs: false: a non-streamed request is not bounded, and the provider gets no timeoutMs', () => {
    const scheduler = new VirtualTimeScheduler();
    const model = silentModel();
    const events: RunEvent[] = [];
    const sub = run(defineAgent({ name: 'a', instructions: '', model }), 'q', {
      scheduler,
      stream: false,
      deadlines: { requestMs: false },
    }).subscribe((e) => events.push(e));
    scheduler.flush();
    expect(events.map((e) => e.type)).toEqual(['run_started', 'turn_started', 'model_request_started']);
    expect(scheduler.actions).toHaveLength(0);
    expect(model.requests.map((r) => r.timeoutMs)).toEqual([undefined]);
    sub.unsubscribe();
  });

  it('a requestMs the caller sets bounds streamed requests too (and is passed to the provider)', () => {
    const scheduler = new VirtualTimeScheduler();
    const model = silentModel();
    const events: RunEvent[] = [];
    run(defineAgent({ name: 'a', instructions: '', model }), 'q', {
      scheduler,
      retry: false,
      deadlines: { requestMs: 5_000 },
    }).subscribe((e) => events.push(e));
    scheduler.flush();
    expect(events.at(-1)).toMatchObject({
      type: 'run_failed',
      at: 5_000,
      error: { name: 'TimeoutError', kind: 'request', timeoutMs: 5_000 },
    });
    expect(model.requests.map((r) => r.timeoutMs)).toEqual([5_000]);
  });
});
