/**
 * A server's `retry-after` is honoured exactly, never earlier; one longer than `retry.maxRetryAfterMs`
 * (DEFAULTS.retry.maxRetryAfterMs, 60 s) is not waited for: the model call fails at once, after one
 * request, with a ModelCallError that gives the server's time.
 */
import { VirtualTimeScheduler } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { DEFAULTS, ModelCallError, RunFailedError, defineAgent, run, start, type RunEvent } from '../src/index.js';
import { scriptedModel } from '../src/testing/index.js';

const rateLimited = (retryAfterMs: number) =>
  new ModelCallError('429 Too Many Requests', {
    status: 429,
    retryable: true,
    retryAfterMs,
    code: 'rate_limit_exceeded',
  });

function runWith(retryAfterMs: number, options: Parameters<typeof run>[2] = {}) {
  const scheduler = new VirtualTimeScheduler();
  const model = scriptedModel([{ error: rateLimited(retryAfterMs) }, 'ok'], { scheduler });
  const events: RunEvent[] = [];
  run(defineAgent({ name: 'a', instructions: '', model }), 'q', { scheduler, random: () => 0.5, ...options }).subscribe(
    (e) => events.push(e),
  );
  scheduler.flush();
  return { model, events };
}

describe('retry-after above retry.maxRetryAfterMs fails at once', () => {
  it('120 s with the default limit: no retry_scheduled, one request, the message and retryAfterMs give the server time', () => {
    expect(DEFAULTS.retry.maxRetryAfterMs).toBe(60_000);
    const { model, events } = runWith(120_000);
    expect(events.map((e) => e.type)).toEqual(['run_started', 'turn_started', 'model_request_started', 'run_failed']);
    expect(events.at(-1)).toMatchObject({
      type: 'run_failed',
      at: 0,
      stopReason: 'model_error',
      error: {
        name: 'ModelCallError',
        message: 'rate limited, retry after 120 s (longer than retry.maxRetryAfterMs, 60 s): 429 Too Many Requests',
        status: 429,
        retryable: false,
        retryAfterMs: 120_000,
        code: 'rate_limit_exceeded',
      },
    });
    expect(model.calls).toHaveLength(1);
  });

  it('handle.result rejects with a RunFailedError whose cause is that ModelCallError, the original error its cause', async () => {
    const original = rateLimited(90_500);
    const model = scriptedModel([{ error: original }, 'ok']);
    const error = await start(defineAgent({ name: 'a', instructions: '', model }), 'q').result.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RunFailedError);
    const cause = (error as RunFailedError).cause as ModelCallError;
    expect(cause).toBeInstanceOf(ModelCallError);
    expect(cause.message).toBe(
      'rate limited, retry after 90.5 s (longer than retry.maxRetryAfterMs, 60 s): 429 Too Many Requests',
    );
    expect([cause.retryAfterMs, cause.retryable, cause.status, cause.cause]).toEqual([90_500, false, 429, original]);
    expect(model.calls).toHaveLength(1);
  });

  it('the limit is an option: retry.maxRetryAfterMs 200 000 honours 120 s exactly', () => {
    const { model, events } = runWith(120_000, { retry: { maxRetryAfterMs: 200_000 } });
    expect(events.filter((e) => e.type === 'retry_scheduled' || e.type === 'model_request_started')).toMatchObject([
      { type: 'model_request_started', at: 0, attempt: 1 },
      { type: 'retry_scheduled', at: 0, attempt: 2, delayMs: 120_000 },
      { type: 'model_request_started', at: 120_000, attempt: 2 },
    ]);
    expect(events.at(-1)).toMatchObject({ type: 'run_completed', at: 120_000 });
    expect(model.calls).toHaveLength(2);
  });
});

describe('a shorter retry-after is honoured exactly, never earlier', () => {
  for (const [asked, waited] of [
    [1_500, 1_500],
    [1_500.2, 1_501],
    [60_000, 60_000],
    [0, 0],
    [20_000, 20_000],
  ] as const) {
    it(`retry-after ${asked} ms: retry_scheduled.delayMs ${waited}, the retry sent ${waited} ms after the failure`, () => {
      const { events } = runWith(asked);
      expect(events.filter((e) => e.type === 'retry_scheduled' || e.type === 'model_request_started')).toMatchObject([
        { type: 'model_request_started', at: 0, attempt: 1 },
        { type: 'retry_scheduled', at: 0, attempt: 2, delayMs: waited },
        { type: 'model_request_started', at: waited, attempt: 2 },
      ]);
      expect(events.at(-1)).toMatchObject({ type: 'run_completed', at: waited, output: 'ok' });
    });
  }
});
