import { readdirSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ModelCallError } from '../src/errors.js';
import type { Item } from '../src/items.js';
import { openaiResponses, toResponsesInput, toResponsesTools } from '../src/model/openai/index.js';
import type { ModelEvent, ModelRequest, ModelResponse } from '../src/model/types.js';
import {
  FIXTURES_DIR,
  collect,
  responsesBody,
  sseData,
  startOpenAIServer,
  type OpenAIServer,
} from './support/openai-server.js';

let server: OpenAIServer;
beforeAll(async () => void (server = await startOpenAIServer()));
afterAll(() => server.close());

const request = (over: Partial<ModelRequest> = {}): ModelRequest => ({
  instructions: '',
  items: [{ type: 'user', id: 'u1', text: 'hi' }],
  tools: [],
  stream: true,
  ...over,
});
const model = () => openaiResponses({ model: 'gpt-test', apiKey: 'test-key', baseURL: server.baseURL });
const responseOf = (events: ModelEvent[]): ModelResponse => {
  const last = events.at(-1);
  if (last?.type !== 'response') throw new Error(`last event is ${last?.type}`);
  return last.response;
};
const deltas = (events: ModelEvent[], type: 'text_delta' | 'reasoning_delta') =>
  events.flatMap((e) => (e.type === type ? [e.delta] : []));
async function replayOk(fixture: string) {
  server.enqueue({ fixture });
  const { events, error, completed } = await collect<ModelEvent>(model().call(request()));
  expect(error).toBeUndefined();
  expect(completed).toBe(true);
  return { events, response: responseOf(events) };
}
const event = (type: string, body: Record<string, unknown>) =>
  `event: ${type}\ndata: ${JSON.stringify({ type, ...body })}\n\n`;

describe('every recording has a test', () => {
  it('chat-*/compat-* are replayed in openai-chat.test.ts, responses-* here', () => {
    const covered = [
      'chat-error-midstream',
      'chat-length-usage',
      'chat-parallel-tools',
      'chat-refusal',
      'chat-text-basic',
      'chat-text-usage',
      'chat-tool-call-capital-usage',
      'chat-tool-call-long-args',
      'chat-tool-call-weather',
      'compat-anthropic-tool-index1',
      'compat-deepseek-reasoning-tool-call',
      'compat-groq-stream-error',
      'compat-groq-tool-call',
      'compat-openrouter-length-error',
      'compat-vllm-length',
      'responses-compat-lmstudio-tool-call',
      'responses-error-event',
      'responses-function-call',
      'responses-text-then-function-call',
      'responses-text',
      'chat-finish-then-disconnect', // hand-written; replayed in wire-finish-then-disconnect.test.ts
      // hand-written structured-output streams; replayed in structured-output.test.ts
      'chat-structured-output',
      'chat-structured-output-invalid',
      'responses-structured-output',
      'responses-structured-output-invalid',
    ].map((n) => `${n}.sse`);
    expect(
      readdirSync(FIXTURES_DIR)
        .filter((f) => f.endsWith('.sse'))
        .sort(),
    ).toEqual(covered.sort());
  });
});

describe('openaiResponses: recorded streams', () => {
  it('responses-text', async () => {
    const { events, response } = await replayOk('responses-text.sse');
    expect(response).toEqual({
      text: '2 + 2 = 4.',
      toolCalls: [],
      finishReason: 'stop',
      usage: { inputTokens: 589, outputTokens: 9, totalTokens: 598 },
    });
    expect(deltas(events, 'text_delta')).toEqual(['2', ' +', ' ', '2', ' =', ' ', '4', '.']);
  });

  it('responses-function-call: reasoning item, then a call in 6 deltas', async () => {
    const { events, response } = await replayOk('responses-function-call.sse');
    expect(response).toEqual({
      text: '',
      finishReason: 'tool_calls',
      usage: { inputTokens: 53, outputTokens: 469, totalTokens: 522 },
      toolCalls: [{ callId: 'call_CWXgs68YprAjp6t0371hiPOI', name: 'final_result', arguments: '{"result":6666}' }],
    });
    expect(JSON.parse(response.toolCalls[0]!.arguments)).toEqual({ result: 6666 });
    expect(events.filter((e) => e.type === 'tool_call_delta')).toEqual([
      {
        type: 'tool_call_delta',
        index: 0,
        callId: 'call_CWXgs68YprAjp6t0371hiPOI',
        name: 'final_result',
        argumentsDelta: '',
      },
      ...['{"', 'result', '":', '666', '6', '}'].map((d) => ({ type: 'tool_call_delta', index: 0, argumentsDelta: d })),
    ]);
  });

  it('responses-text-then-function-call: commentary text and a call', async () => {
    const { events, response } = await replayOk('responses-text-then-function-call.sse');
    const text = 'I’ll check the capital lookup tool for “PotatoLand.”';
    expect(response).toEqual({
      text,
      finishReason: 'tool_calls',
      usage: { inputTokens: 63, outputTokens: 69, totalTokens: 132 },
      toolCalls: [
        { callId: 'call_LabG58Uhrq9kZvR52BYKjToD', name: 'get_capital', arguments: '{"country":"PotatoLand"}' },
      ],
    });
    expect(deltas(events, 'text_delta')).toHaveLength(13);
    expect(deltas(events, 'text_delta').join('')).toBe(text);
  });

  it('responses-compat-lmstudio-tool-call: reasoning_text, text, and arguments only in .done', async () => {
    const { events, response } = await replayOk('responses-compat-lmstudio-tool-call.sse');
    const reasoning =
      'The user is asking for the weather in San Francisco. I have a weather function available that ' +
      'takes a location parameter. The user has provided "San Francisco" as the location, so I have ' +
      'all the required information to make the function call.';
    expect(response).toEqual({
      text: "I'll get the current weather information for San Francisco for you.",
      reasoning,
      finishReason: 'tool_calls',
      usage: { inputTokens: 182, outputTokens: 61, totalTokens: 243 },
      toolCalls: [{ callId: 'call_2025306790300011', name: 'weather', arguments: '{"location":"San Francisco"}' }],
    });
    expect(deltas(events, 'reasoning_delta').join('')).toBe(reasoning);
    expect(events.filter((e) => e.type === 'tool_call_delta')).toEqual([
      { type: 'tool_call_delta', index: 0, callId: 'call_2025306790300011', name: 'weather', argumentsDelta: '' },
      { type: 'tool_call_delta', index: 0, argumentsDelta: '{"location":"San Francisco"}' },
    ]);
  });

  it('responses-error-event: `error` event → non-retryable insufficient_quota, stream started', async () => {
    server.enqueue({ fixture: 'responses-error-event.sse' });
    const { events, error } = await collect<ModelEvent>(model().call(request()));
    expect(events).toEqual([]);
    expect(error).toBeInstanceOf(ModelCallError);
    expect(error).toMatchObject({
      status: undefined,
      retryable: false,
      code: 'insufficient_quota',
      streamStarted: true,
    });
    expect((error as Error).message).toContain('You exceeded your current quota');
  });
});

describe('openaiResponses: scripted', () => {
  it('a flat `error` event (documented shape) and response.failed are typed errors', async () => {
    server.enqueue({
      sse: [
        event('response.created', { response: {} }),
        event('error', { code: 'server_error', message: 'boom', param: null }),
      ],
    });
    expect((await collect<ModelEvent>(model().call(request()))).error).toMatchObject({
      retryable: true,
      code: 'server_error',
      streamStarted: true,
    });
    server.enqueue({
      sse: [
        event('response.failed', {
          response: { status: 'failed', error: { code: 'rate_limit_exceeded', message: 'slow down' }, output: [] },
        }),
      ],
    });
    expect((await collect<ModelEvent>(model().call(request()))).error).toMatchObject({
      retryable: false,
      code: 'rate_limit_exceeded',
      streamStarted: false,
    });
  });

  it('response.incomplete (max_output_tokens) → length; a stream without completion → stream_truncated', async () => {
    server.enqueue({
      sse: [
        event('response.output_text.delta', { delta: 'Lon', item_id: 'm', output_index: 0, content_index: 0 }),
        event('response.incomplete', {
          response: {
            ...responsesBody({ text: 'Lon', usage: [5, 1] }),
            status: 'incomplete',
            incomplete_details: { reason: 'max_output_tokens' },
          },
        }),
      ],
    });
    expect(responseOf((await collect<ModelEvent>(model().call(request()))).events)).toEqual({
      text: 'Lon',
      toolCalls: [],
      finishReason: 'length',
      usage: { inputTokens: 5, outputTokens: 1, totalTokens: 6 },
    });
    server.enqueue({
      sse: [event('response.output_text.delta', { delta: 'Lon', item_id: 'm', output_index: 0, content_index: 0 })],
    });
    expect((await collect<ModelEvent>(model().call(request()))).error).toMatchObject({
      retryable: true,
      code: 'stream_truncated',
      streamStarted: true,
    });
  });

  it('a data line that is not JSON → typed error, not a hang', async () => {
    const OpenAI = (await import('openai')).default;
    const quiet = openaiResponses({
      model: 'm',
      client: new OpenAI({ apiKey: 'k', baseURL: server.baseURL, logLevel: 'off' }),
    });
    server.enqueue({ sse: ['event: response.created\ndata: {oops\n\n'] });
    expect((await collect<ModelEvent>(quiet.call(request()))).error).toMatchObject({
      code: 'invalid_json',
      retryable: false,
    });
    // no event: line
    server.enqueue({ sse: [sseData({ type: 'response.output_text.delta', delta: 'x', item_id: 'm' })] });
    expect((await collect<ModelEvent>(quiet.call(request()))).error).toMatchObject({ code: 'stream_truncated' });
  });
});

describe('openaiResponses: request', () => {
  const history: Item[] = [
    { type: 'user', id: 'u1', text: 'Capital of France?' },
    {
      type: 'assistant',
      id: 'a1',
      text: 'Looking it up.',
      toolCalls: [{ callId: 'c1', name: 'get_capital', arguments: '{"country":"France"}' }],
    },
    { type: 'tool_result', callId: 'c1', output: 'Paris', isError: false },
    { type: 'assistant', id: 'a2', text: '', toolCalls: [{ callId: 'c2', name: 'noop', arguments: '{}' }] },
    { type: 'tool_result', callId: 'c2', output: 'failed', isError: true },
    { type: 'assistant', id: 'a3', text: 'Paris.', toolCalls: [] },
  ];
  const expectedInput = [
    { type: 'message', role: 'user', content: 'Capital of France?' },
    { type: 'message', role: 'assistant', content: 'Looking it up.' },
    { type: 'function_call', call_id: 'c1', name: 'get_capital', arguments: '{"country":"France"}' },
    { type: 'function_call_output', call_id: 'c1', output: 'Paris' },
    { type: 'function_call', call_id: 'c2', name: 'noop', arguments: '{}' },
    { type: 'function_call_output', call_id: 'c2', output: 'failed' },
    { type: 'message', role: 'assistant', content: 'Paris.' },
  ];
  const tools = [{ name: 'get_capital', description: 'Capital of a country', parameters: { type: 'object' } }];

  it('converts items and tools', () => {
    expect(toResponsesInput(history)).toEqual(expectedInput);
    expect(toResponsesTools(tools)).toEqual([
      {
        type: 'function',
        name: 'get_capital',
        description: 'Capital of a country',
        parameters: { type: 'object' },
        strict: false,
      },
    ]);
  });

  it('streaming request body, id and path', async () => {
    server.enqueue({ fixture: 'responses-text.sse' });
    const provider = openaiResponses({
      model: 'gpt-test',
      apiKey: 'test-key',
      baseURL: server.baseURL,
      request: { store: false },
    });
    expect(provider.id).toBe('openai-responses:gpt-test');
    const n = server.requests.length;
    await collect(provider.call(request({ instructions: 'Be brief.', items: history, tools })));
    expect(server.requests[n]!.path).toBe('/v1/responses');
    expect(server.requests[n]!.body).toEqual({
      store: false,
      model: 'gpt-test',
      instructions: 'Be brief.',
      input: expectedInput,
      tools: toResponsesTools(tools),
      stream: true,
    });
  });

  it('non-streaming: one response event with text, tool calls and usage', async () => {
    server.enqueue({
      json: responsesBody({
        text: 'Checking.',
        calls: [{ callId: 'call_9', name: 'get_capital', arguments: '{"country":"Peru"}' }],
        usage: [40, 12],
      }),
    });
    const n = server.requests.length;
    const { events, completed } = await collect<ModelEvent>(model().call(request({ stream: false })));
    expect(completed).toBe(true);
    expect(server.requests[n]!.body.stream).toBe(false);
    expect(events).toEqual([
      {
        type: 'response',
        response: {
          text: 'Checking.',
          finishReason: 'tool_calls',
          usage: { inputTokens: 40, outputTokens: 12, totalTokens: 52 },
          toolCalls: [{ callId: 'call_9', name: 'get_capital', arguments: '{"country":"Peru"}' }],
        },
      },
    ]);
  });

  it('non-streaming failed response → typed error', async () => {
    server.enqueue({
      json: { ...responsesBody({}), status: 'failed', error: { code: 'server_error', message: 'oops' } },
    });
    expect((await collect<ModelEvent>(model().call(request({ stream: false })))).error).toMatchObject({
      code: 'server_error',
      retryable: true,
      status: undefined,
    });
  });
});
