/**
 * "Retry transient errors only" (src/engine/recovery/retry-transient.ts): checkpoint 9: backoff
 * (the backoff sleep raced against the cancel) and the retry schedule of docs/recovery.md, with the
 * real engine in virtual time; then the operator on its own, over an attempt factory.
 */
import { NEVER } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { beforeEach, describe, expect, it } from 'vitest';
import { CancelSignal } from '../../src/cancel/index.js';
import { breakerFor } from '../../src/engine/recovery/breaker.js';
import { defineAgent } from '../../src/engine/define-agent.js';
import { run } from '../../src/engine/run.js';
import { ModelCallError } from '../../src/errors.js';
import type { RunEvent } from '../../src/events.js';
import { eventLabels, scriptedModel, sequentialIds, type ScriptedStep } from '../../src/testing/index.js';
import { retryPolicy } from '../../src/engine/recovery/backoff.js';
import { retryTransient } from '../../src/engine/recovery/retry-transient.js';
import { FIRST_ATTEMPT } from '../../src/engine/recovery/types.js';
import { answer, fakeAttempts, newCall, recoveryContext } from '../support/recovery.js';

let ts: TestScheduler;
beforeEach(() => {
  ts = new TestScheduler((actual, expected) => expect(actual).toEqual(expected));
});

const L = {
  s: 'run_started',
  t: 'turn_started',
  q: 'model_request_started',
  d: 'text_delta',
  r: 'model_response_completed',
  u: 'turn_completed',
  y: 'retry_scheduled',
  C: 'run_completed',
  F: 'run_failed:model_error',
  b: 'run_cancelled:backoff',
  m: 'run_cancelled:model_request',
};
const rateLimited = (retryAfterMs?: number): ModelCallError =>
  new ModelCallError('rate limited', {
    status: 429,
    retryable: true,
    ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
  });

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
      run(agent, 'hi', {
        idGenerator: sequentialIds(),
        retry: { maxRetries: 3, initialDelayMs: 1000, maxDelayMs: 3000 },
        random: () => rs.shift()!,
      }).subscribe((e) => {
        if (e.type === 'model_request_started') log.push([ts.now(), 'request', e.attempt]);
        if (e.type === 'retry_scheduled')
          log.push([ts.now(), 'retry', e.attempt, e.delayMs, e.error.name, e.error.status]);
        if (e.type === 'run_completed') log.push([ts.now(), 'completed']);
      });
      flush();
      expect(log).toEqual([
        [0, 'request', 1],
        [0, 'retry', 2, 500, 'ModelCallError', 429],
        [500, 'request', 2],
        [500, 'retry', 3, 500, 'ModelCallError', 429], // 0.25 * 2000
        [1000, 'request', 3],
        [1000, 'retry', 4, 2700, 'ModelCallError', 429], // 0.9 * min(3000, 4000)
        [3700, 'request', 4],
        [3700, 'completed'],
      ]);
    });
  });

  it('retry-after is honoured exactly (above maxDelayMs too); beyond 60 s (maxRetryAfterMs) it fails at once', () => {
    ts.run(({ flush }) => {
      const model = scriptedModel([
        { error: rateLimited(12_000) },
        { error: rateLimited(0) },
        { error: rateLimited(90_000) },
        'ok',
      ]);
      const agent = defineAgent({ name: 'a', instructions: '', model });
      const delays: [number, number][] = [];
      let done = -1;
      let failed: RunEvent | undefined;
      run(agent, 'hi', {
        retry: { maxRetries: 3, initialDelayMs: 1000, maxDelayMs: 3000 },
        random: () => 0.5,
      }).subscribe((e) => {
        if (e.type === 'retry_scheduled') delays.push([ts.now(), e.delayMs]);
        if (e.type === 'run_completed') done = ts.now();
        if (e.type === 'run_failed') failed = e;
      });
      flush();
      expect(delays).toEqual([
        [0, 12_000],
        [12_000, 0],
      ]);
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
      const labels$ = run(agent, 'hi', { retry: { maxRetries: 1, initialDelayMs: 100 }, random: () => 0.5 }).pipe(
        eventLabels(),
      );
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

describe('the retryTransient operator over an attempt factory (its own spec)', () => {
  const policy = retryPolicy({ maxRetries: 2, initialDelayMs: 100 });
  const ok = answer('ok');

  it('a transient error: the backoff stage emits retry_scheduled, sleeps, and the retry says why it is made', () => {
    ts.run(({ cold, expectObservable, expectSubscriptions, flush }) => {
      const { ctx, events } = recoveryContext();
      const error = rateLimited();
      const first = cold('--#', undefined, error);
      const second = cold('-(r|)', { r: ok });
      const { attempts, whys } = fakeAttempts([first, second]);
      const out = retryTransient(ctx, policy, () => 0.5)(attempts)(newCall(), FIRST_ATTEMPT);
      expectObservable(out).toBe('53ms (r|)', { r: ok });
      expectSubscriptions(first.subscriptions).toBe('^-!');
      expectSubscriptions(second.subscriptions).toBe('52ms ^!');
      flush();
      expect(events).toEqual(['2:retry_scheduled:2:50']);
      expect(whys).toEqual([FIRST_ATTEMPT, { cause: 'retry', error }]);
    });
  });

  it('the run waits at backoff during the sleep, and nowhere once the retry is made', () => {
    ts.run(({ cold, flush }) => {
      const { ctx, waits } = recoveryContext();
      const { attempts } = fakeAttempts([cold('--#', undefined, rateLimited()), cold('-(r|)', { r: ok })]);
      retryTransient(ctx, policy, () => 0.5)(attempts)(newCall(), FIRST_ATTEMPT).subscribe();
      const seen: string[] = [];
      for (const frame of [1, 30, 51, 53]) ts.schedule(() => seen.push(`${frame}:${waits.innermost}`), frame);
      flush();
      expect(seen).toEqual(['1:turn_entry', '30:backoff', '51:backoff', '53:turn_entry']);
    });
  });

  for (const order of ['cancel scheduled first', 'cancel scheduled after the failure'] as const) {
    it(`a cancel in the frame of the failure (${order}): no retry_scheduled, no retry, no sleep`, () => {
      ts.run(({ cold, expectObservable, flush }) => {
        const { ctx, token, events } = recoveryContext();
        const { attempts, count } = fakeAttempts([cold('--#', undefined, rateLimited()), cold('r', { r: ok })]);
        if (order === 'cancel scheduled first') ts.schedule(() => token.cancel('stop'), 2);
        else late(() => token.cancel('stop'), 2, 1);
        expectObservable(retryTransient(ctx, policy, () => 0.5)(attempts)(newCall(), FIRST_ATTEMPT)).toBe('--|');
        flush();
        expect(events).toEqual([]);
        expect(count()).toBe(1);
        expect(ts.actions).toEqual([]);
      });
    });
  }

  it('an error that is not transient passes at once; spent retries pass the last error', () => {
    ts.run(({ cold, expectObservable, flush }) => {
      const { ctx, events } = recoveryContext();
      const fatal = new ModelCallError('bad request', { status: 400 });
      const once = fakeAttempts([cold('--#', undefined, fatal)]);
      const fatal$ = retryTransient(ctx, policy, () => 0.5)(once.attempts)(newCall(), FIRST_ATTEMPT);
      expectObservable(fatal$).toBe('--#', undefined, fatal);
      const last = rateLimited();
      const spent = fakeAttempts([cold('--#', undefined, rateLimited()), cold('--#', undefined, last)]);
      const oneRetry = retryPolicy({ maxRetries: 1, initialDelayMs: 100 });
      expectObservable(retryTransient(ctx, oneRetry, () => 0.5)(spent.attempts)(newCall(), FIRST_ATTEMPT)).toBe(
        '54ms #',
        undefined,
        last,
      );
      flush();
      expect(events).toEqual(['2:retry_scheduled:2:50']);
    });
  });

  it("a retry-after beyond maxRetryAfterMs fails at once, not retryable, keeping the server's wait", () => {
    ts.run(({ cold, flush }) => {
      const { ctx, events } = recoveryContext();
      const asked = rateLimited(90_000);
      const { attempts, count } = fakeAttempts([cold('--#', undefined, asked)]);
      let failure: unknown;
      const out = retryTransient(ctx, policy, () => 0.5)(attempts)(newCall(), FIRST_ATTEMPT);
      out.subscribe({ error: (e) => (failure = e) });
      flush();
      const kept = { retryable: false, retryAfterMs: 90_000, status: 429, cause: asked };
      expect(failure).toMatchObject({ name: 'ModelCallError', ...kept });
      expect(events).toEqual([]);
      expect(count()).toBe(1);
    });
  });

  it('the billed usage of a failed attempt rides with retry_scheduled', () => {
    ts.run(({ cold, flush }) => {
      const { ctx, facts } = recoveryContext();
      const call = newCall();
      call.ledger.billed = { inputTokens: 1, outputTokens: 2, totalTokens: 3, reported: true };
      const { attempts } = fakeAttempts([cold('#', undefined, rateLimited()), cold('r', { r: ok })]);
      retryTransient(ctx, policy, () => 0.5)(attempts)(call, FIRST_ATTEMPT).subscribe();
      flush();
      expect(facts).toEqual([{ billed: { inputTokens: 1, outputTokens: 2, totalTokens: 3, reported: true } }]);
      expect(call.ledger.billed).toBeUndefined();
    });
  });
});
