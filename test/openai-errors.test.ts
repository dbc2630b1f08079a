import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ModelCallError } from '../src/errors.js';
import { openaiChat, openaiResponses, retryAfterMs, toModelCallError } from '../src/model/openai/index.js';
import type { ModelEvent, ModelRequest, ModelResponse } from '../src/model/types.js';
import {
  SSE_DONE,
  chatChunk,
  collect,
  sseData,
  startOpenAIServer,
  toolCallDelta,
  wireUsage,
  type OpenAIServer,
} from './support/openai-server.js';

let server: OpenAIServer;
beforeAll(async () => void (server = await startOpenAIServer()));
afterAll(() => server.close());

const request = (stream: boolean): ModelRequest => ({
  instructions: '',
  items: [{ type: 'user', id: 'u', text: 'hi' }],
  tools: [],
  stream,
});
async function failWith(
  answer: Parameters<OpenAIServer['enqueue']>[0],
  stream = true,
  api: 'chat' | 'responses' = 'chat',
) {
  server.enqueue(answer);
  const options = { model: 'gpt-test', apiKey: 'k', baseURL: server.baseURL };
  const provider = api === 'chat' ? openaiChat(options) : openaiResponses(options);
  const { events, error } = await collect<ModelEvent>(provider.call(request(stream)));
  expect(events).toEqual([]);
  expect(error).toBeInstanceOf(ModelCallError);
  expect((error as ModelCallError).cause).toBeInstanceOf(OpenAI.APIError);
  const { status, retryable, retryAfterMs, code, streamStarted } = error as ModelCallError;
  return { status, retryable, retryAfterMs, code, streamStarted, message: (error as Error).message };
}

describe('recorded error bodies served with their status (and headers)', () => {
  const cases = [
    ['error-400-context-length-exceeded.json', 400, false, 'context_length_exceeded'],
    ['error-400-unsupported-parameter.json', 400, false, 'unsupported_parameter'],
    ['error-401.json', 401, false, 'invalid_api_key'],
    ['error-404-model-not-found.json', 404, false, 'model_not_found'],
    ['error-429-insufficient-quota.json', 429, false, 'insufficient_quota'], // waiting never fixes it
    ['error-429-rate-limit.json', 429, false, 'rate_limit_exceeded'], // "Request too large", type tokens
    ['error-429-openrouter.json', 429, true, '429'], // numeric code; no retry-after header recorded
    ['error-500.json', 500, true, 'server_error'], // code null → type
  ] as const;
  for (const [file, status, retryable, code] of cases) {
    it(`${file} → ${status}, retryable ${retryable}, code ${code}`, async () => {
      for (const stream of [true, false]) {
        const got = await failWith({ errorFixture: file, status }, stream);
        expect(got).toMatchObject({ status, retryable, code, retryAfterMs: undefined, streamStarted: false });
      }
    });
  }

  it('messages keep the provider text (OpenRouter adds metadata.raw)', async () => {
    expect((await failWith({ errorFixture: 'error-401.json', status: 401 })).message).toBe(
      '401 Incorrect API key provided: sk-. You can find your API key at https://platform.openai.com/account/api-keys.',
    );
    expect((await failWith({ errorFixture: 'error-429-openrouter.json', status: 429 })).message).toBe(
      '429 Provider returned error: google/gemini-2.0-flash-exp:free is temporarily rate-limited upstream. Please retry shortly, or add your own key to accumulate your rate limits: https://openrouter.ai/settings/integrations',
    );
  });

  it('the Responses adapter classifies the same way', async () => {
    expect(
      await failWith({ errorFixture: 'error-429-insufficient-quota.json', status: 429 }, true, 'responses'),
    ).toMatchObject({ status: 429, retryable: false, code: 'insufficient_quota' });
    expect(await failWith({ errorFixture: 'error-500.json', status: 500 }, false, 'responses')).toMatchObject({
      status: 500,
      retryable: true,
    });
  });
});

describe('scripted statuses and headers', () => {
  const body = { error: { message: 'nope', type: 'x', code: 'c' } };
  it.each([
    [408, true],
    [409, true],
    [429, true],
    [500, true],
    [502, true],
    [503, true],
    [400, false],
    [403, false],
    [422, false],
  ])('status %i → retryable %s', async (status, retryable) => {
    expect(await failWith({ json: body, status })).toMatchObject({ status, retryable, code: 'c' });
  });

  it('x-should-retry overrides the status rule', async () => {
    expect(await failWith({ json: body, status: 500, headers: { 'x-should-retry': 'false' } })).toMatchObject({
      retryable: false,
    });
    expect(await failWith({ json: body, status: 400, headers: { 'x-should-retry': 'true' } })).toMatchObject({
      retryable: true,
    });
    expect(
      await failWith({
        errorFixture: 'error-429-insufficient-quota.json',
        status: 429,
        headers: { 'x-should-retry': 'true' },
      }),
    ).toMatchObject({ retryable: true });
  });

  it('retry-after-ms wins over retry-after; retry-after in seconds', async () => {
    expect(
      await failWith({ json: body, status: 429, headers: { 'retry-after-ms': '150', 'retry-after': '9' } }),
    ).toMatchObject({ retryAfterMs: 150 });
    expect(await failWith({ json: body, status: 503, headers: { 'retry-after': '2' } })).toMatchObject({
      retryAfterMs: 2000,
    });
    expect(await failWith({ json: body, status: 503, headers: { 'retry-after': '0.5' } })).toMatchObject({
      retryAfterMs: 500,
    });
  });

  it('an ordinary TPM limit (type tokens, "Rate limit reached") stays retryable', async () => {
    const tpm = {
      error: {
        message: 'Rate limit reached for gpt-4o on tokens per min (TPM): Limit 30000. Please try again in 2s.',
        type: 'tokens',
        code: 'rate_limit_exceeded',
      },
    };
    expect(await failWith({ json: tpm, status: 429 })).toMatchObject({ retryable: true, code: 'rate_limit_exceeded' });
  });

  it('a body that is not JSON still maps by status', async () => {
    expect(await failWith({ json: 'Bad Gateway', status: 502 })).toMatchObject({
      status: 502,
      retryable: true,
      code: undefined,
    });
  });
});

describe('retryAfterMs', () => {
  const h = (init: Record<string, string>) => new Headers(init);
  it('parses ms, seconds and HTTP-dates; ignores junk', () => {
    const now = Date.parse('Thu, 14 Aug 2025 02:18:43 GMT');
    expect(retryAfterMs(h({ 'retry-after-ms': '20' }), now)).toBe(20);
    expect(retryAfterMs(h({ 'retry-after': '3' }), now)).toBe(3000);
    expect(retryAfterMs(h({ 'retry-after': 'Thu, 14 Aug 2025 02:18:48 GMT' }), now)).toBe(5000);
    expect(retryAfterMs(h({ 'retry-after': 'Thu, 14 Aug 2025 02:18:40 GMT' }), now)).toBe(0);
    expect(retryAfterMs(h({ 'retry-after': 'soon' }), now)).toBeUndefined();
    expect(retryAfterMs(h({ 'retry-after-ms': 'x', 'retry-after': '1' }), now)).toBe(1000);
    expect(retryAfterMs(undefined, now)).toBeUndefined();
  });
});

describe('connection failures', () => {
  it('connection refused → retryable, no status', async () => {
    const dead = await startOpenAIServer();
    const baseURL = dead.baseURL;
    await dead.close();
    const { error } = await collect<ModelEvent>(openaiChat({ model: 'm', apiKey: 'k', baseURL }).call(request(true)));
    expect(error).toBeInstanceOf(ModelCallError);
    expect(error).toMatchObject({ status: undefined, retryable: true, streamStarted: false, code: 'ECONNREFUSED' });
    expect((error as ModelCallError).cause).toBeInstanceOf(OpenAI.APIConnectionError);
  });

  it('socket destroyed mid-stream → retryable, stream started', async () => {
    server.enqueue({ fixture: 'chat-text-basic.sse', cutAfter: 5 });
    const { events, error } = await collect<ModelEvent>(
      openaiChat({ model: 'm', apiKey: 'k', baseURL: server.baseURL }).call(request(true)),
    );
    expect(events.map((e) => (e.type === 'text_delta' ? e.delta : e.type))).toEqual(['Hi', ' there', '!', ' How']);
    expect(error).toBeInstanceOf(ModelCallError);
    expect(error).toMatchObject({ status: undefined, retryable: true, streamStarted: true });
  });

  it('SDK timeout and reset errors classify as retryable', () => {
    expect(toModelCallError(new OpenAI.APIConnectionTimeoutError(), { streamStarted: false })).toMatchObject({
      retryable: true,
      status: undefined,
    });
    const reset = Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' });
    expect(toModelCallError(reset, { streamStarted: true })).toMatchObject({
      retryable: true,
      code: 'ECONNRESET',
      streamStarted: true,
    });
    expect(
      toModelCallError(new TypeError('terminated', { cause: { code: 'UND_ERR_SOCKET' } }), { streamStarted: true }),
    ).toMatchObject({ retryable: true, code: 'UND_ERR_SOCKET' });
    expect(toModelCallError(new Error('something else'), { streamStarted: false })).toMatchObject({
      retryable: false,
      code: undefined,
    });
    const same = new ModelCallError('x', { retryable: true });
    expect(toModelCallError(same, { streamStarted: true })).toBe(same);
  });

  it('in-stream error payloads: retryable only when 5xx-like', () => {
    const inStream = (payload: object) =>
      toModelCallError(new OpenAI.APIError(undefined, payload, undefined, undefined), { streamStarted: true });
    expect(inStream({ type: 'server_error', code: null, message: 'm' })).toMatchObject({
      retryable: true,
      code: 'server_error',
      status: undefined,
    });
    expect(inStream({ code: 502, message: 'upstream' })).toMatchObject({ retryable: true, code: '502' });
    expect(inStream({ code: 'tool_use_failed', status_code: 400, message: 'm' })).toMatchObject({ retryable: false });
    expect(inStream({ code: 'rate_limit_exceeded', message: 'm' })).toMatchObject({ retryable: false });
    expect(inStream({ type: 'overloaded_error', message: 'm' })).toMatchObject({ retryable: true });
  });
});

const req = (over: Partial<ModelRequest> = {}): ModelRequest => ({ ...request(true), ...over });
const chatModel = () => openaiChat({ model: 'gpt-test', apiKey: 'test-key', baseURL: server.baseURL });
const responseOf = (events: ModelEvent[]): ModelResponse => {
  const last = events.at(-1);
  if (last?.type !== 'response') throw new Error(`last event is ${last?.type}`);
  return last.response;
};

describe('openaiChat: malformed server output (typed error or clean response, never a hang)', () => {
  const quiet = () =>
    openaiChat({ model: 'gpt-test', client: new OpenAI({ apiKey: 'k', baseURL: server.baseURL, logLevel: 'off' }) });

  it('a data line that is not JSON → non-retryable invalid_json', async () => {
    server.enqueue({ sse: [sseData(chatChunk({ content: 'Hel' })), 'data: {not json\n\n', SSE_DONE] });
    const { events, error } = await collect<ModelEvent>(quiet().call(req()));
    expect(events).toEqual([{ type: 'text_delta', delta: 'Hel' }]);
    expect(error).toBeInstanceOf(ModelCallError);
    expect(error).toMatchObject({ retryable: false, code: 'invalid_json', streamStarted: true });
  });

  it('a stream ending without [DONE] after finish_reason → clean response', async () => {
    server.enqueue({ sse: [sseData(chatChunk({ content: 'ok' })), sseData(chatChunk({}, { finishReason: 'stop' }))] });
    const { events, completed } = await collect<ModelEvent>(chatModel().call(req()));
    expect(completed).toBe(true);
    expect(responseOf(events)).toEqual({ text: 'ok', toolCalls: [], finishReason: 'stop' });
  });

  it('a stream ending without finish_reason → retryable stream_truncated', async () => {
    server.enqueue({ sse: [sseData(chatChunk({ content: 'cut' }))] });
    const { error } = await collect<ModelEvent>(chatModel().call(req()));
    expect(error).toMatchObject({ retryable: true, code: 'stream_truncated', streamStarted: true });
  });

  it('an empty 200 stream → retryable stream_truncated, not started', async () => {
    server.enqueue({ sse: [] });
    const { error } = await collect<ModelEvent>(chatModel().call(req()));
    expect(error).toMatchObject({ retryable: true, code: 'stream_truncated', streamStarted: false });
  });

  it('tool arguments that are not JSON pass through as raw text', async () => {
    server.enqueue({
      sse: [
        sseData(chatChunk({ tool_calls: [toolCallDelta(0, '{"city": Par', 'call_x', 'weather')] })),
        sseData(chatChunk({ tool_calls: [toolCallDelta(0, 'is')] })),
        sseData(chatChunk({}, { finishReason: 'tool_calls', usage: wireUsage(3, 4) })),
        SSE_DONE,
      ],
    });
    const { events } = await collect<ModelEvent>(chatModel().call(req()));
    expect(responseOf(events)).toEqual({
      text: '',
      finishReason: 'tool_calls',
      usage: { inputTokens: 3, outputTokens: 4, totalTokens: 7 },
      toolCalls: [{ callId: 'call_x', name: 'weather', arguments: '{"city": Paris' }],
    });
  });

  it('an unknown finish_reason maps to other; a non-JSON 200 body → invalid_json', async () => {
    server.enqueue({ sse: [sseData(chatChunk({ content: 'x' }, { finishReason: 'eos' })), SSE_DONE] });
    expect(responseOf((await collect<ModelEvent>(chatModel().call(req()))).events).finishReason).toBe('other');
    server.enqueue({ json: '<html>not an API</html>' });
    const { error } = await collect<ModelEvent>(quiet().call(req({ stream: false })));
    expect(error).toMatchObject({ retryable: false, code: 'invalid_json' });
  });
});
