/**
 * Gemini failures classified for recovery: 429 RESOURCE_EXHAUSTED retryable with the RetryInfo delay, 503 UNAVAILABLE
 * retryable, 400 INVALID_ARGUMENT not, an error object inside a 200 stream, and the engine acting on them (a retry
 * that honours the server's delay, a cut stream rescued without streaming).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineAgent, run, type RunEvent } from '../src/index.js';
import { ModelCallError } from '../src/errors.js';
import { gemini, retryDelayMs, toGeminiCallError } from '../src/model/gemini/index.js';
import type { ModelRequest } from '../src/model/types.js';
import { collectEvents } from '../src/testing/index.js';
import { collect } from './support/openai-server.js';
import { geminiFrame, geminiText, startGeminiServer, type GeminiServer } from './support/gemini-server.js';

let server: GeminiServer;
beforeAll(async () => void (server = await startGeminiServer()));
afterAll(() => server.close());

const model = () => gemini({ model: 'gemini-2.5-flash', apiKey: 'k', baseURL: server.url });
const request = (stream: boolean): ModelRequest => ({
  instructions: '',
  items: [{ type: 'user', id: 'u', text: 'hi' }],
  tools: [],
  stream,
});

async function failure(script: Parameters<GeminiServer['enqueue']>[0], stream = true) {
  server.enqueue(script);
  const { error } = await collect(model().call(request(stream)));
  expect(error).toBeInstanceOf(ModelCallError);
  const { status, retryable, retryAfterMs, code, streamStarted, message } = error as ModelCallError;
  return { status, retryable, retryAfterMs, code, streamStarted, message };
}

describe('HTTP errors', () => {
  it.each([true, false])(
    '429 RESOURCE_EXHAUSTED: retryable, retry-after from RetryInfo (stream: %s)',
    async (stream) => {
      expect(await failure({ fixture: 'error-429-resource-exhausted.json' }, stream)).toMatchObject({
        status: 429,
        retryable: true,
        retryAfterMs: 37_000,
        code: 'RESOURCE_EXHAUSTED',
        streamStarted: false,
        message: expect.stringMatching(/^429 RESOURCE_EXHAUSTED: You exceeded your current quota/),
      });
    },
  );

  it('503 UNAVAILABLE: retryable, no delay given', async () => {
    expect(await failure({ fixture: 'error-503-unavailable.json' })).toEqual({
      status: 503,
      retryable: true,
      retryAfterMs: undefined,
      code: 'UNAVAILABLE',
      streamStarted: false,
      message: '503 UNAVAILABLE: The model is overloaded. Please try again later.',
    });
  });

  it('500 INTERNAL: retryable', async () => {
    const body = { error: { code: 500, message: 'An internal error has occurred.', status: 'INTERNAL' } };
    expect(await failure({ json: body })).toMatchObject({ status: 500, retryable: true, code: 'INTERNAL' });
  });

  it('400 INVALID_ARGUMENT: not retryable, the words of the error in the message', async () => {
    const got = await failure({ fixture: 'error-400-invalid-argument.json' }, false);
    expect(got).toMatchObject({ status: 400, retryable: false, code: 'INVALID_ARGUMENT' });
    expect(got.message).toBe(
      `400 INVALID_ARGUMENT: Invalid JSON payload received. Unknown name "temprature" at 'generation_config': ` +
        'Cannot find field.',
    );
  });

  it('403 PERMISSION_DENIED and 404 NOT_FOUND: not retryable', async () => {
    const denied = { error: { code: 403, message: 'API key not valid.', status: 'PERMISSION_DENIED' } };
    expect(await failure({ json: denied })).toMatchObject({ status: 403, retryable: false, code: 'PERMISSION_DENIED' });
    const missing = { error: { code: 404, message: 'models/nope is not found', status: 'NOT_FOUND' } };
    expect(await failure({ json: missing })).toMatchObject({ status: 404, retryable: false, code: 'NOT_FOUND' });
  });

  it('an error object inside a 200 stream: classified by its code and status', async () => {
    const overloaded = geminiFrame({
      error: { code: 503, message: 'The model is overloaded.', status: 'UNAVAILABLE' },
    });
    const got = await failure({
      sse: [geminiFrame({ candidates: [{ content: { parts: [{ text: 'a' }] } }] }), overloaded],
    });
    expect(got).toMatchObject({ status: 503, retryable: true, code: 'UNAVAILABLE' });
  });
});

describe('retryDelayMs', () => {
  const info = (retryDelay: unknown) => [
    { '@type': 'type.googleapis.com/google.rpc.Help' },
    { '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay },
  ];
  it('reads a protobuf Duration in its JSON forms', () => {
    expect(retryDelayMs(info('37s'))).toBe(37_000);
    expect(retryDelayMs(info('0.5s'))).toBe(500);
    expect(retryDelayMs(info({ seconds: 2, nanos: 500_000_000 }))).toBe(2_500);
    expect(retryDelayMs(info('soon'))).toBeUndefined();
    expect(retryDelayMs([{ '@type': 'type.googleapis.com/google.rpc.Help' }])).toBeUndefined();
    expect(retryDelayMs(undefined)).toBeUndefined();
  });
});

describe('connection failures', () => {
  it('a refused connection is retryable, with the socket error code', async () => {
    const closed = await startGeminiServer();
    const url = closed.url;
    await closed.close();
    const { error } = await collect(gemini({ model: 'm', apiKey: 'k', baseURL: url }).call(request(true)));
    expect(error).toMatchObject({ name: 'ModelCallError', retryable: true, code: 'ECONNREFUSED' });
  });

  it("the SDK's own timer (an abort loopctl did not make) is a retryable timeout", () => {
    const abort = new DOMException('This operation was aborted', 'AbortError');
    expect(toGeminiCallError(abort, { streamStarted: true })).toMatchObject({
      retryable: true,
      code: 'timeout',
      streamStarted: true,
    });
  });

  it('anything unknown is not retryable', () => {
    expect(toGeminiCallError(new Error('boom'), { streamStarted: false })).toMatchObject({ retryable: false });
  });
});

describe('the engine acts on the classification', () => {
  const agent = () => defineAgent({ name: 'g', instructions: '', model: model() });

  it('a 429 schedules the retry after the server-given delay; a cancel during the backoff ends the run', async () => {
    server.enqueue({ fixture: 'error-429-resource-exhausted.json' });
    const controller = new AbortController();
    const events: RunEvent[] = [];
    await new Promise<void>((resolve) =>
      run(agent(), 'hi', { signal: controller.signal }).subscribe({
        next: (e) => {
          events.push(e);
          if (e.type === 'retry_scheduled') controller.abort(); // the backoff is a checkpoint: no 37 s wait
        },
        complete: resolve,
      }),
    );
    const scheduled = events.find((e) => e.type === 'retry_scheduled');
    expect(scheduled).toMatchObject({ delayMs: 37_000, error: { name: 'ModelCallError', status: 429 } });
    expect(events.at(-1)).toMatchObject({ type: 'run_cancelled' });
  });

  it('a 503 is retried and the run completes', async () => {
    server.enqueue({ fixture: 'error-503-unavailable.json' }, geminiText('Recovered.'));
    const events = await collectEvents(
      run(agent(), 'hi', { retry: { initialDelayMs: 0, maxDelayMs: 0 }, random: () => 0 }),
    );
    expect(events.filter((e) => e.type === 'retry_scheduled')).toHaveLength(1);
    expect(events.at(-1)).toMatchObject({ type: 'run_completed', output: 'Recovered.' });
  });

  it('a 400 fails the run at once, without a retry', async () => {
    server.enqueue({ fixture: 'error-400-invalid-argument.json' });
    const events = await collectEvents(run(agent(), 'hi'));
    expect(events.filter((e) => e.type === 'retry_scheduled')).toEqual([]);
    expect(events.at(-1)).toMatchObject({ type: 'run_failed', stopReason: 'model_error' });
  });

  it('a stream cut after its first chunk is rescued by one non-streamed generateContent', async () => {
    const n = server.requests.length;
    server.enqueue({ fixture: 'text.sse', cutAfter: 1 }, { fixture: 'generate-content.json' });
    const events = await collectEvents(run(agent(), 'hi'));
    expect(server.requests.slice(n).map((r) => r.stream)).toEqual([true, false]);
    const starts = events.filter((e) => e.type === 'model_request_started');
    expect(starts.map((e) => (e as { cause?: string }).cause)).toEqual([undefined, 'rescue']);
    expect(events.at(-1)).toMatchObject({ type: 'run_completed', output: 'Four.' });
  });
});
