/**
 * Checkpoint 9: backoff (the recovery backoff sleep raced against the cancel)
 * and the retry schedule of docs/recovery.md ("retry transient errors only"),
 * with the real engine in virtual time.
 */
import { NEVER } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { beforeEach, describe, expect, it } from 'vitest';
import { CancelSignal } from '../src/cancel/index.js';
import { breakerFor } from '../src/engine/recovery/breaker.js';
import { defineAgent } from '../src/engine/define-agent.js';
import { run } from '../src/engine/run.js';
import { ModelCallError } from '../src/errors.js';
import type { RunEvent } from '../src/events.js';
import { eventLabels, scriptedModel, sequentialIds, type ScriptedStep } from '../src/testing/index.js';

let ts: TestScheduler;
beforeEach(() => {
  ts = new TestScheduler((actual, expected) => expect(actual).toEqual(expected));
});

const L = {
  s: 'run_started', t: 'turn_started', q: 'model_request_started', d: 'text_delta', r: 'model_response_completed',
  u: 'turn_completed', y: 'retry_scheduled', C: 'run_completed', F: 'run_failed:model_error',
  b: 'run_cancelled:backoff', m: 'run_cancelled:model_request',
};
const rateLimited = (retryAfterMs?: number): ModelCallError =>
  new ModelCallError('rate limited', { status: 429, retryable: true, ...(retryAfterMs !== undefined ? { retryAfterMs } : {}) });

/** Schedules `work` at `frame`, after every action of that frame that exists by frame `from` (< frame). */
function late(work: () => void, frame: number, from: number): void {
  ts.schedule(() => ts.schedule(work, frame - from), from);
}

/** Attempt 1 fails at frame 10; the backoff (random 0.5 of 1000 ms) sleeps until frame 510. */
function setup(
  steps: (ScriptedStep | string)[] = [{ delayMs: 10, error: rateLimited() }, 'ok'],
  extra: Parameters<typeof run>[2] = {},
) {
  const model = scriptedModel(steps);
  const agent = defineAgent({ name: 'a', instructions: '', model });
  const cancel = new CancelSignal();
  const events: RunEvent[] = [];
  const retry = { maxRetries: 3, initialDelayMs: 1000 };
  const events$ = run(agent, 'hi', { cancel, idGenerator: sequentialIds(), retry, random: () => 0.5, ...extra });
  return { model, cancel, events, labels$: events$.pipe(eventLabels()), events$ };
}

describe('row 9: the backoff sleep is raced against the cancel', () => {
  it('without a cancel: retry_scheduled at the failure, the retry 500 ms later', () => {
    ts.run(({ expectObservable }) => {
      const { labels$ } = setup();
      expectObservable(labels$).toBe('(stq) 5ms y 499ms (qdruC|)', L);
    });
  });

  it('cancel during the sleep: no retry starts and the sleep leaves no scheduled action', () => {
    ts.run(({ expectObservable, flush }) => {
      const { model, cancel, labels$ } = setup();
      const pending: number[] = [];
      ts.schedule(() => {
        pending.push(ts.actions.length); // the backoff timer
        cancel.cancel('stop');
        pending.push(ts.actions.length);
      }, 300);
      expectObservable(labels$).toBe('(stq) 5ms y 289ms (b|)', L);
      flush();
      expect(pending).toEqual([1, 0]);
      expect(model.calls.length).toBe(1);
    });
  });

  it('tie at the end of the sleep, cancel scheduled first: no retry starts', () => {
    ts.run(({ expectObservable, flush }) => {
      const { model, cancel, labels$ } = setup();
      ts.schedule(() => cancel.cancel('stop'), 510);
      expectObservable(labels$).toBe('(stq) 5ms y 499ms (b|)', L);
      flush();
      expect(model.calls.length).toBe(1);
      expect(ts.actions).toEqual([]);
    });
  });

  it('tie at the end of the sleep, cancel scheduled after the timer: the retry is polled first and never sent', () => {
    ts.run(({ expectObservable, flush }) => {
      const { model, cancel, labels$ } = setup();
      late(() => cancel.cancel('stop'), 510, 11); // the timer was scheduled at frame 10
      expectObservable(labels$).toBe('(stq) 5ms y 499ms (m|)', L);
      flush();
      expect(model.calls.length).toBe(1);
      expect(ts.actions).toEqual([]);
    });
  });

  it('tie with the failure, cancel first: no retry_scheduled, no sleep', () => {
    ts.run(({ expectObservable, flush }) => {
      const { model, cancel, labels$ } = setup();
      ts.schedule(() => cancel.cancel('stop'), 10);
      expectObservable(labels$).toBe('(stq) 5ms (m|)', L);
      flush();
      expect(model.calls.map((c) => c.tornDown)).toEqual([true]);
      expect(breakerFor(model, undefined).failures).toBe(0);
    });
  });

  it('tie with the failure, cancel after it: what follows a failure is a stage, so no retry_scheduled and no breaker count', () => {
    ts.run(({ expectObservable, flush }) => {
      const { model, cancel, labels$ } = setup();
      late(() => cancel.cancel('stop'), 10, 1); // the failure was scheduled at frame 0
      expectObservable(labels$).toBe('(stq) 5ms (m|)', L);
      flush();
      expect(model.calls.length).toBe(1);
      expect(breakerFor(model, undefined).failures).toBe(0);
    });
  });

  it('control: the same failure without a cancel is counted by the breaker', () => {
    ts.run(({ flush }) => {
      // The retry hangs: its default first-event deadline is turned off so that it stays hung.
      const steps = [{ delayMs: 10, error: rateLimited() }, { hold: NEVER }];
      const { model, labels$ } = setup(steps, { deadlines: { firstEventMs: false } });
      labels$.subscribe();
      flush();
      expect(breakerFor(model, undefined)).toMatchObject({ state: 'closed', failures: 1 });
      expect(model.calls.length).toBe(2); // the retry hangs
    });
  });

  it('a cancel raised inside the handler of retry_scheduled: the sleep is never scheduled', () => {
    ts.run(({ flush }) => {
      const { model, cancel, events$ } = setup();
      const seen: string[] = [];
      let pendingAfter = -1;
      events$.subscribe((e) => {
        seen.push(e.type);
        if (e.type === 'retry_scheduled') {
          cancel.cancel('stop');
          pendingAfter = ts.actions.length;
        }
      });
      flush();
      expect(seen.slice(-2)).toEqual(['retry_scheduled', 'run_cancelled']);
      expect(pendingAfter).toBe(0);
      expect(model.calls.length).toBe(1);
    });
  });
});

describe('the retry schedule (full jitter from the injected random source, cap, retry-after)', () => {
  it('exact delays: floor(r * min(maxDelayMs, initialDelayMs * 2^(n-1))) with r = 0.5, 0.25, 0.9', () => {
    ts.run(({ flush }) => {
      const model = scriptedModel([{ error: rateLimited() }, { error: rateLimited() }, { error: rateLimited() }, 'ok']);
      const agent = defineAgent({ name: 'a', instructions: '', model });
      const rs = [0.5, 0.25, 0.9];
      const log: unknown[] = [];
      run(agent, 'hi', { idGenerator: sequentialIds(), retry: { maxRetries: 3, initialDelayMs: 1000, maxDelayMs: 3000 }, random: () => rs.shift()! })
        .subscribe((e) => {
          if (e.type === 'model_request_started') log.push([ts.now(), 'request', e.attempt]);
          if (e.type === 'retry_scheduled') log.push([ts.now(), 'retry', e.attempt, e.delayMs, e.error.name, e.error.status]);
          if (e.type === 'run_completed') log.push([ts.now(), 'completed']);
        });
      flush();
      expect(log).toEqual([
        [0, 'request', 1], [0, 'retry', 2, 500, 'ModelCallError', 429],
        [500, 'request', 2], [500, 'retry', 3, 500, 'ModelCallError', 429], // 0.25 * 2000
        [1000, 'request', 3], [1000, 'retry', 4, 2700, 'ModelCallError', 429], // 0.9 * min(3000, 4000)
        [3700, 'request', 4], [3700, 'completed'],
      ]);
    });
  });

  it('retry-after is honoured exactly (above maxDelayMs too); beyond 60 s (maxRetryAfterMs) it fails at once', () => {
    ts.run(({ flush }) => {
      const model = scriptedModel([{ error: rateLimited(12_000) }, { error: rateLimited(0) }, { error: rateLimited(90_000) }, 'ok']);
      const agent = defineAgent({ name: 'a', instructions: '', model });
      const delays: [number, number][] = [];
      let done = -1;
      let failed: RunEvent | undefined;
      run(agent, 'hi', { retry: { maxRetries: 3, initialDelayMs: 1000, maxDelayMs: 3000 }, random: () => 0.5 }).subscribe((e) => {
        if (e.type === 'retry_scheduled') delays.push([ts.now(), e.delayMs]);
        if (e.type === 'run_completed') done = ts.now();
        if (e.type === 'run_failed') failed = e;
      });
      flush();
      expect(delays).toEqual([[0, 12_000], [12_000, 0]]);
      expect(done).toBe(-1);
      const error = { retryAfterMs: 90_000, retryable: false };
      expect(failed).toMatchObject({ at: 12_000, stopReason: 'model_error', error });
      expect(model.calls).toHaveLength(3);
    });
  });

  it('retries are spent: the last error fails the run (model_error) after maxRetries sleeps', () => {
    ts.run(({ expectObservable }) => {
      const model = scriptedModel([{ error: rateLimited() }, { error: rateLimited() }]);
      const agent = defineAgent({ name: 'a', instructions: '', model });
      const labels$ = run(agent, 'hi', { retry: { maxRetries: 1, initialDelayMs: 100 }, random: () => 0.5 }).pipe(eventLabels());
      expectObservable(labels$).toBe('(stqy) 44ms (qF|)', L);
    });
  });

  it('a non-retryable error is not retried', () => {
    ts.run(({ expectObservable }) => {
      const model = scriptedModel([{ error: new ModelCallError('bad request', { status: 400 }) }, 'ok']);
      const agent = defineAgent({ name: 'a', instructions: '', model });
      expectObservable(run(agent, 'hi', { random: () => 0.5 }).pipe(eventLabels())).toBe('(stqF|)', L);
    });
  });
});
