import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigurationError, ModelCallError } from '../src/errors.js';
import type { Item } from '../src/items.js';
import { openaiChat, toChatMessages, toChatTools } from '../src/model/openai/index.js';
import { requestTimeout } from '../src/model/openai/provider.js';
import type { ModelEvent, ModelRequest, ModelResponse } from '../src/model/types.js';
import { chatCompletion, collect, startOpenAIServer, wireUsage, type OpenAIServer } from './support/openai-server.js';

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
const model = () => openaiChat({ model: 'gpt-test', apiKey: 'test-key', baseURL: server.baseURL });
const responseOf = (events: ModelEvent[]): ModelResponse => {
  const last = events.at(-1);
  if (last?.type !== 'response') throw new Error(`last event is ${last?.type}`);
  return last.response;
};
const deltas = (events: ModelEvent[], type: 'text_delta' | 'reasoning_delta' | 'refusal_delta') =>
  events.flatMap((e) => (e.type === type ? [e.delta] : []));
async function replay(fixture: string) {
  server.enqueue({ fixture });
  return collect<ModelEvent>(model().call(request()));
}
async function replayOk(fixture: string) {
  const { events, error, completed } = await replay(fixture);
  expect(error).toBeUndefined();
  expect(completed).toBe(true);
  expect(events.filter((e) => e.type === 'response')).toHaveLength(1);
  return { events, response: responseOf(events) };
}

describe('openaiChat: recorded streams', () => {
  it('chat-text-basic: text, stop, no usage', async () => {
    const { events, response } = await replayOk('chat-text-basic.sse');
    const text =
      'Hi there! How can I help today? I can answer questions, explain concepts, help with writing or ' +
      'brainstorming, code, plan something, and more. Tell me what you’d like to work on or a topic ' +
      'you’re curious about.';
    expect(response).toEqual({ text, toolCalls: [], finishReason: 'stop' });
    expect(deltas(events, 'text_delta')).toHaveLength(48);
    expect(deltas(events, 'text_delta').join('')).toBe(text);
  });

  it('chat-text-usage: text and the final usage chunk', async () => {
    const { response } = await replayOk('chat-text-usage.sse');
    expect(response).toEqual({
      text: 'The capital of the UK is London.',
      toolCalls: [],
      finishReason: 'stop',
      usage: { inputTokens: 78, outputTokens: 9, totalTokens: 87 },
    });
  });

  it('chat-tool-call-capital-usage: one call in 5 argument pieces', async () => {
    const { events, response } = await replayOk('chat-tool-call-capital-usage.sse');
    expect(response).toEqual({
      text: '',
      finishReason: 'tool_calls',
      usage: { inputTokens: 53, outputTokens: 15, totalTokens: 68 },
      toolCalls: [{ callId: 'call_ZR5UUuTt3pf61kjwAJIYdVMj', name: 'get_capital', arguments: '{"country":"UK"}' }],
    });
    expect(JSON.parse(response.toolCalls[0]!.arguments)).toEqual({ country: 'UK' });
    expect(events[0]).toEqual({
      type: 'tool_call_delta',
      index: 0,
      callId: 'call_ZR5UUuTt3pf61kjwAJIYdVMj',
      name: 'get_capital',
      argumentsDelta: '',
    });
    expect(events.filter((e) => e.type === 'tool_call_delta')).toHaveLength(6);
  });

  it('chat-tool-call-weather: 7 argument deltas', async () => {
    const { response } = await replayOk('chat-tool-call-weather.sse');
    expect(response.toolCalls).toEqual([
      { callId: 'call_bCEixqN8Y40SUyius8ZfVErH', name: 'get_weather', arguments: '{"location":"New York, NY"}' },
    ]);
    expect(response.finishReason).toBe('tool_calls');
    expect(response.usage).toEqual({ inputTokens: 68, outputTokens: 18, totalTokens: 86 });
  });

  it('chat-tool-call-long-args: 229 bytes of arguments from many deltas', async () => {
    const { response } = await replayOk('chat-tool-call-long-args.sse');
    const args =
      '{"answers":[{"label":"Capital","answer":"The capital of Mexico is Mexico ' +
      'City."},{"label":"Weather","answer":"The weather in Mexico City is currently ' +
      'sunny."},{"label":"Product Name","answer":"The product name is Pydantic AI."}]}';
    expect(args).toHaveLength(229);
    expect(response.toolCalls).toEqual([
      { callId: 'call_CCGIWaMeYWmxOQ91orkmTvzn', name: 'final_result', arguments: args },
    ]);
    expect(JSON.parse(response.toolCalls[0]!.arguments).answers[2]).toEqual({
      label: 'Product Name',
      answer: 'The product name is Pydantic AI.',
    });
    expect(response.usage).toEqual({ inputTokens: 448, outputTokens: 62, totalTokens: 510 });
  });

  it('chat-parallel-tools: two calls assembled by index', async () => {
    const { response } = await replayOk('chat-parallel-tools.sse');
    expect(response.toolCalls).toEqual([
      { callId: 'call_NS4iQj14cDFwc0BnrKqDHavt', name: 'get_weather', arguments: '{"city": "Mexico City"}' },
      { callId: 'call_SkGkkGDvHQEEk0CGbnAh2AQw', name: 'get_product_name', arguments: '{}' },
    ]);
    expect(response.toolCalls.map((c) => JSON.parse(c.arguments))).toEqual([{ city: 'Mexico City' }, {}]);
    expect(response.finishReason).toBe('tool_calls');
    expect(response.usage).toEqual({ inputTokens: 417, outputTokens: 44, totalTokens: 461 });
  });

  it('chat-refusal: refusal deltas, no text', async () => {
    const { events, response } = await replayOk('chat-refusal.sse');
    const refusal = "I'm very sorry, but I can't assist with that request.";
    expect(response).toEqual({
      text: '',
      toolCalls: [],
      finishReason: 'stop',
      refusal,
      usage: { inputTokens: 17, outputTokens: 13, totalTokens: 30 },
    });
    expect(deltas(events, 'refusal_delta')).toHaveLength(12);
    expect(deltas(events, 'text_delta')).toEqual([]);
  });

  it('chat-length-usage: length with no visible content', async () => {
    const { events, response } = await replayOk('chat-length-usage.sse');
    expect(events).toHaveLength(1);
    expect(response).toEqual({
      text: '',
      toolCalls: [],
      finishReason: 'length',
      usage: { inputTokens: 12, outputTokens: 100, totalTokens: 112 },
    });
  });

  it('chat-error-midstream: an error object as the first chunk → retryable ModelCallError, stream not started', async () => {
    const { events, error } = await replay('chat-error-midstream.sse');
    expect(events).toEqual([]);
    expect(error).toBeInstanceOf(ModelCallError);
    expect(error).toMatchObject({
      status: undefined,
      retryable: true,
      code: 'server_error',
      streamStarted: false,
      retryAfterMs: undefined,
    });
    expect((error as Error).message).toContain('The server had an error processing your request.');
    expect((error as ModelCallError).cause).toBeInstanceOf(OpenAI.APIError);
  });

  it('compat-vllm-length: finish_reason on the last content chunk, no usage', async () => {
    const { response } = await replayOk('compat-vllm-length.sse');
    expect(response).toEqual({
      text: '<|im_end|>doctor\n<|im_end|>supervisor\n<',
      toolCalls: [],
      finishReason: 'length',
    });
  });

  it('compat-groq-tool-call: a whole call in one chunk, usage on the finish chunk', async () => {
    const { response } = await replayOk('compat-groq-tool-call.sse');
    expect(response).toEqual({
      text: '',
      finishReason: 'tool_calls',
      usage: { inputTokens: 210, outputTokens: 15, totalTokens: 225 },
      toolCalls: [{ callId: 'tk85n1k4m', name: 'weather', arguments: '{}' }],
    });
  });

  it('compat-groq-stream-error: reasoning deltas, then `event: error` → non-retryable ModelCallError', async () => {
    const { events, error } = await replay('compat-groq-stream-error.sse');
    expect(deltas(events, 'reasoning_delta').join('')).toBe(
      'We need to call the tool with invalid parameters first, then second call with valid args. The ' +
        'user wants us to test error handling. So first call should have wrong parameters (e.g., missing ' +
        'required "name" or extra param). The tool expects only "name". If we send extra property, that ' +
        'might cause error. Or missing "name". We\'ll do a call with missing name: {}. Then second call ' +
        'with name: "test". Let\'s do that.',
    );
    expect(events.some((e) => e.type === 'response')).toBe(false);
    expect(error).toBeInstanceOf(ModelCallError);
    expect(error).toMatchObject({ status: undefined, retryable: false, code: 'tool_use_failed', streamStarted: true });
  });

  it('compat-openrouter-length-error: comment lines, reasoning, then an error chunk', async () => {
    const { events, error } = await replay('compat-openrouter-length-error.sse');
    expect(deltas(events, 'reasoning_delta')).toEqual(['We need', ' to respond to a greeting. The user']);
    expect(error).toBeInstanceOf(ModelCallError);
    expect(error).toMatchObject({ status: undefined, retryable: false, code: '400', streamStarted: true });
    expect((error as Error).message).toContain('Token limit reached');
  });

  it('compat-deepseek-reasoning-tool-call: reasoning_content, then a call', async () => {
    const { events, response } = await replayOk('compat-deepseek-reasoning-tool-call.sse');
    const reasoning =
      'The user is asking for the weather in San Francisco. I need to use the weather tool to get this ' +
      'information. Let me invoke the weather tool with the location parameter set to "San Francisco".';
    expect(response).toEqual({
      text: '',
      reasoning,
      finishReason: 'tool_calls',
      usage: { inputTokens: 339, outputTokens: 83, totalTokens: 422 },
      toolCalls: [
        { callId: 'call_00_ioIn7yN9p1ZOMNpDLwd4MgAF', name: 'weather', arguments: '{"location": "San Francisco"}' },
      ],
    });
    expect(deltas(events, 'reasoning_delta').join('')).toBe(reasoning);
  });

  it('compat-anthropic-tool-index1: text, then a call whose first index is 1', async () => {
    const { events, response } = await replayOk('compat-anthropic-tool-index1.sse');
    expect(response).toEqual({
      text: 'Reading it.',
      finishReason: 'tool_calls',
      toolCalls: [{ callId: 'toolu_sanitized', name: 'read_file', arguments: '{"path": "a.txt"}' }],
    });
    expect(events.filter((e) => e.type === 'tool_call_delta')).toEqual([
      { type: 'tool_call_delta', index: 1, callId: 'toolu_sanitized', name: 'read_file', argumentsDelta: '' },
      { type: 'tool_call_delta', index: 1, argumentsDelta: '{"pa' },
      { type: 'tool_call_delta', index: 1, argumentsDelta: 'th": "a.txt"}' },
    ]);
  });
});

describe('openaiChat: request', () => {
  const history: Item[] = [
    { type: 'user', id: 'u1', text: 'Weather in Paris and Rome?' },
    {
      type: 'assistant',
      id: 'a1',
      text: '',
      toolCalls: [
        { callId: 'c1', name: 'weather', arguments: '{"city":"Paris"}' },
        { callId: 'c2', name: 'weather', arguments: '{"city":"Rome"}' },
      ],
    },
    { type: 'tool_result', callId: 'c1', output: 'sunny', isError: false },
    { type: 'tool_result', callId: 'c2', output: 'error: timeout', isError: true },
    { type: 'assistant', id: 'a2', text: 'Paris is sunny.', toolCalls: [] },
    { type: 'user', id: 'u2', text: 'And Oslo?' },
    {
      type: 'assistant',
      id: 'a3',
      text: 'Checking.',
      toolCalls: [{ callId: 'c3', name: 'weather', arguments: '{"city":"Oslo"}' }],
    },
    { type: 'tool_result', callId: 'c3', output: 'snow', isError: false, interrupted: true },
  ];
  const expected = [
    { role: 'system', content: 'You are terse.' },
    { role: 'user', content: 'Weather in Paris and Rome?' },
    {
      role: 'assistant',
      content: null,
      tool_calls: [
        { id: 'c1', type: 'function', function: { name: 'weather', arguments: '{"city":"Paris"}' } },
        { id: 'c2', type: 'function', function: { name: 'weather', arguments: '{"city":"Rome"}' } },
      ],
    },
    { role: 'tool', tool_call_id: 'c1', content: 'sunny' },
    { role: 'tool', tool_call_id: 'c2', content: 'error: timeout' },
    { role: 'assistant', content: 'Paris is sunny.' },
    { role: 'user', content: 'And Oslo?' },
    {
      role: 'assistant',
      content: 'Checking.',
      tool_calls: [{ id: 'c3', type: 'function', function: { name: 'weather', arguments: '{"city":"Oslo"}' } }],
    },
    { role: 'tool', tool_call_id: 'c3', content: 'snow' },
  ];
  const tools = [
    {
      name: 'weather',
      description: 'Weather by city',
      parameters: { type: 'object', properties: { city: { type: 'string' } } },
    },
  ];

  it('converts items and tools to the exact wire messages', () => {
    expect(toChatMessages('You are terse.', history)).toEqual(expected);
    expect(toChatMessages('', [])).toEqual([]);
    expect(toChatTools(tools)).toEqual([{ type: 'function', function: tools[0] }]);
  });

  it('streaming sends stream + include_usage, extras, key, and no SDK retries', async () => {
    server.enqueue({ fixture: 'chat-text-usage.sse' });
    const provider = openaiChat({
      model: 'gpt-test',
      apiKey: 'test-key',
      baseURL: server.baseURL,
      request: { temperature: 0, parallel_tool_calls: false, model: 'ignored' },
    });
    expect(provider.id).toBe('openai:gpt-test');
    expect(provider.stream).toBe(true);
    const n = server.requests.length;
    await collect(provider.call(request({ instructions: 'You are terse.', items: history, tools })));
    const sent = server.requests[n]!;
    expect(sent.method).toBe('POST');
    expect(sent.path).toBe('/v1/chat/completions');
    expect(sent.headers['authorization']).toBe('Bearer test-key');
    expect(sent.headers['x-stainless-retry-count']).toBe('0');
    expect(sent.body).toEqual({
      temperature: 0,
      parallel_tool_calls: false,
      model: 'gpt-test',
      messages: expected,
      tools: toChatTools(tools),
      stream: true,
      stream_options: { include_usage: true },
    });
  });

  it('non-streaming: stream false, the response carries text, tool calls and usage', async () => {
    server.enqueue({
      json: chatCompletion(
        { content: 'Let me check.', tool_calls: [{ id: 'call_1', name: 'weather', arguments: '{"city":"Oslo"}' }] },
        'tool_calls',
        wireUsage(21, 7),
      ),
    });
    const n = server.requests.length;
    const { events, completed } = await collect<ModelEvent>(model().call(request({ stream: false })));
    expect(completed).toBe(true);
    expect(server.requests[n]!.body.stream).toBe(false);
    expect(server.requests[n]!.body.stream_options).toBeUndefined();
    expect(events).toEqual([
      {
        type: 'response',
        response: {
          text: 'Let me check.',
          finishReason: 'tool_calls',
          usage: { inputTokens: 21, outputTokens: 7, totalTokens: 28 },
          toolCalls: [{ callId: 'call_1', name: 'weather', arguments: '{"city":"Oslo"}' }],
        },
      },
    ]);
  });

  it('a user client keeps its options but gets maxRetries 0 and the timeout per request', async () => {
    const client = new OpenAI({ apiKey: 'user-key', baseURL: server.baseURL, maxRetries: 5, timeout: 1 });
    const provider = openaiChat({ model: 'gpt-test', client });
    server.enqueue({ json: chatCompletion({ content: 'late' }), delayMs: 30 });
    const ok = await collect<ModelEvent>(provider.call(request({ stream: false })));
    expect(responseOf(ok.events).text).toBe('late'); // the client's 1 ms timeout was overridden
    server.enqueue({ errorFixture: 'error-500.json', status: 500 });
    const n = server.requests.length;
    const failed = await collect<ModelEvent>(provider.call(request({ stream: false })));
    expect(failed.error).toMatchObject({ status: 500, retryable: true });
    expect(server.requests.length).toBe(n + 1); // the SDK did not retry
  });

  it('SDK timeout per request: the engine deadline + 1 s margin, else timeoutMs, else 600 s', () => {
    expect(requestTimeout({ model: 'm', timeoutMs: 5000 }, request({ timeoutMs: 30_000 }))).toBe(31_000);
    expect(requestTimeout({ model: 'm', timeoutMs: 5000 }, request())).toBe(5000);
    expect(requestTimeout({ model: 'm' }, request())).toBe(600_000);
  });

  it('validates options at construction', () => {
    const saved = process.env['OPENAI_API_KEY'];
    delete process.env['OPENAI_API_KEY'];
    try {
      expect(() => openaiChat({ model: 'm' })).toThrow(ConfigurationError);
      expect(() => openaiChat({ model: 'm' })).toThrow(/^apiKey: /);
      expect(() => openaiChat({ model: '', apiKey: 'k' })).toThrow(/^model: /);
      expect(() => openaiChat({ model: 'm', apiKey: 'k', timeoutMs: 0 })).toThrow(/^timeoutMs: /);
      process.env['OPENAI_API_KEY'] = 'from-env';
      expect(openaiChat({ model: 'm', stream: false }).stream).toBe(false);
    } finally {
      if (saved === undefined) delete process.env['OPENAI_API_KEY'];
      else process.env['OPENAI_API_KEY'] = saved;
    }
  });
});
