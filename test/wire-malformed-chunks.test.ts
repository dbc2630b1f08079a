import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineAgent, openaiChat, openaiResponses, run, type ModelProvider } from '../src/index.js';
import type { ModelEvent, ModelRequest } from '../src/model/types.js';
import { collectEvents } from '../src/testing/index.js';
import {
  SSE_DONE,
  chatChunk,
  chatCompletion,
  collect,
  responsesBody,
  sseData,
  startOpenAIServer,
  type OpenAIServer,
  type ScriptedResponse,
} from './support/openai-server.js';

/**
 * Malformed chunks from the wire (`choices` null or an object, a
 * tool-call list holding null, a delta of the wrong type, a Responses event
 * without its item…) never surface as a raw TypeError. Each is a
 * `ModelOutputError` with `code: 'malformed_chunk'` (a streamed chunk) or
 * `'malformed_response'` (a whole body) and `field` naming the offending
 * field; where the API allows a chunk to carry nothing (`choices: null`), the
 * chunk is skipped. A run ends `run_failed` (`model_error`) after one request.
 */

let server: OpenAIServer;
beforeAll(async () => void (server = await startOpenAIServer()));
afterAll(() => server.close());

const options = () => ({ model: 'gpt-test', apiKey: 'test-key', baseURL: server.baseURL });
const request = (stream = true): ModelRequest => ({
  instructions: '',
  items: [{ type: 'user', id: 'u1', text: 'hi' }],
  tools: [],
  stream,
});
const event = (type: string, body: Record<string, unknown>) =>
  `event: ${type}\ndata: ${JSON.stringify({ type, ...body })}\n\n`;
const raw = (type: string, data: string) => `event: ${type}\ndata: ${data}\n\n`;
const hello = sseData(chatChunk({ role: 'assistant', content: 'Hel' }));

async function failureOf(provider: ModelProvider, answer: ScriptedResponse, stream = true) {
  server.enqueue(answer);
  const { events, error, completed } = await collect<ModelEvent>(provider.call(request(stream)));
  expect(completed).toBe(false);
  expect(events.filter((e) => e.type === 'response')).toEqual([]);
  return error as { name: string; code: string; field: string; message: string };
}

const chatCases: [string, string, string][] = [
  ['choices is an object', sseData({ ...chatChunk({}), choices: {} }), 'choices must be an array, got an object'],
  ['choices holds null', sseData({ ...chatChunk({}), choices: [null] }), 'choices[0] must be an object, got null'],
  [
    'a delta that is a string',
    sseData(chatChunk({}, { choices: [{ index: 0, delta: 'x', finish_reason: null }] })),
    'choices[0].delta must be an object, got a string',
  ],
  [
    'a tool-call list that is an object',
    sseData(chatChunk({ tool_calls: {} })),
    'choices[0].delta.tool_calls must be an array, got an object',
  ],
  [
    'a tool-call list holding null',
    sseData(chatChunk({ tool_calls: [null] })),
    'choices[0].delta.tool_calls[0] must be an object, got null',
  ],
  [
    'tool-call arguments that are a number',
    sseData(chatChunk({ tool_calls: [{ index: 0, id: 'c1', function: { name: 'f', arguments: 5 } }] })),
    'choices[0].delta.tool_calls[0].function.arguments must be a string, got a number',
  ],
  ['a chunk that is null', 'data: null\n\n', 'chunk must be an object, got null'],
];

describe('malformed Chat Completions chunks', () => {
  it.each(chatCases)('%s → ModelOutputError malformed_chunk naming the field', async (_name, frame, detail) => {
    const error = await failureOf(openaiChat(options()), { sse: [hello, frame, SSE_DONE] });
    const field = detail.slice(0, detail.indexOf(' must be'));
    expect(error).toMatchObject({ name: 'ModelOutputError', code: 'malformed_chunk', field });
    expect(error.message).toBe(`malformed stream chunk: ${detail}`);
  });

  it('choices: null carries nothing and is skipped; the stream completes', async () => {
    server.enqueue({
      sse: [
        hello,
        sseData({ ...chatChunk({}), choices: null }),
        sseData(chatChunk({ content: 'lo' }, { finishReason: 'stop' })),
        SSE_DONE,
      ],
    });
    const { events, error } = await collect<ModelEvent>(openaiChat(options()).call(request()));
    expect(error).toBeUndefined();
    expect(events.at(-1)).toEqual({
      type: 'response',
      response: { text: 'Hello', toolCalls: [], finishReason: 'stop' },
    });
  });

  it('a whole completion with choices [null] (not streamed) → malformed_response naming the field', async () => {
    const body = { ...chatCompletion({ content: 'x' }), choices: [null] };
    const error = await failureOf(openaiChat(options()), { json: body }, false);
    expect(error).toMatchObject({ name: 'ModelOutputError', code: 'malformed_response', field: 'choices[0]' });
    expect(error.message).toBe('malformed response: choices[0] must be an object, got null');
    const calls = chatCompletion({ content: null });
    (calls.choices[0]!.message as Record<string, unknown>)['tool_calls'] = [null];
    expect(await failureOf(openaiChat(options()), { json: calls }, false)).toMatchObject({
      code: 'malformed_response',
      field: 'choices[0].message.tool_calls[0]',
    });
  });
});

const fnItem = { type: 'function_call', id: 'fc_1', call_id: 'call_1', name: 'f', arguments: '' };
const responsesCases: [string, string, string][] = [
  ['an event that is null', raw('response.output_text.delta', 'null'), 'event must be an object, got null'],
  [
    'an added item that is null',
    event('response.output_item.added', { output_index: 0, item: null }),
    'item must be an object, got null',
  ],
  [
    'a call id that is a number',
    event('response.output_item.added', { output_index: 0, item: { ...fnItem, call_id: 5 } }),
    'item.call_id must be a string, got a number',
  ],
  [
    'an arguments delta that is a number',
    event('response.function_call_arguments.delta', { item_id: 'fc_1', output_index: 0, delta: 5 }),
    'delta must be a string, got a number',
  ],
  [
    'a text delta that is an object',
    event('response.output_text.delta', { delta: {}, item_id: 'm' }),
    'delta must be a string, got an object',
  ],
  [
    'a completed event without its response',
    event('response.completed', { response: null }),
    'response must be an object, got null',
  ],
  [
    'a completed response whose output is an object',
    event('response.completed', { response: { ...responsesBody({}), output: {} } }),
    'response.output must be an array, got an object',
  ],
  [
    'a completed response whose output holds null',
    event('response.completed', { response: { ...responsesBody({}), output: [null] } }),
    'response.output[0] must be an object, got null',
  ],
];

describe('malformed Responses stream events', () => {
  const start = event('response.output_text.delta', { delta: 'Hel', item_id: 'm', output_index: 0, content_index: 0 });
  it.each(responsesCases)('%s → ModelOutputError malformed_chunk naming the field', async (_name, frame, detail) => {
    const error = await failureOf(openaiResponses(options()), { sse: [start, frame] });
    const field = detail.slice(0, detail.indexOf(' must be'));
    expect(error).toMatchObject({ name: 'ModelOutputError', code: 'malformed_chunk', field });
    expect(error.message).toBe(`malformed stream chunk: ${detail}`);
  });

  it('a whole Responses object whose output holds null (not streamed) → malformed_response', async () => {
    const error = await failureOf(
      openaiResponses(options()),
      { json: { ...responsesBody({}), output: [null] } },
      false,
    );
    expect(error).toMatchObject({ name: 'ModelOutputError', code: 'malformed_response', field: 'output[0]' });
    expect(error.message).toBe('malformed response: output[0] must be an object, got null');
  });
});

describe('a non-streamed Responses answer that is not JSON', () => {
  it('is invalid_json, not an empty answer or a TypeError', async () => {
    const page = { json: '<html>sign in</html>', headers: { 'content-type': 'text/html' } };
    expect(await failureOf(openaiResponses(options()), page, false)).toMatchObject({
      name: 'ModelCallError',
      code: 'invalid_json',
      retryable: false,
    });
  });
});

describe('a run that meets a malformed chunk', () => {
  it.each([
    ['chat', () => openaiChat(options()), [hello, sseData({ ...chatChunk({}), choices: {} }), SSE_DONE], 'choices'],
    [
      'responses',
      () => openaiResponses(options()),
      [
        event('response.output_text.delta', { delta: 'Hel', item_id: 'm', output_index: 0, content_index: 0 }),
        event('response.output_item.added', { output_index: 1, item: null }),
      ],
      'item',
    ],
  ] as const)(
    '%s: run_failed (model_error) with the typed error, after one request, not rescued',
    async (_api, model, sse, field) => {
      const before = server.requests.length;
      server.enqueue({ sse });
      const agent = defineAgent({ name: 'a', instructions: '', model: model() });
      const events = await collectEvents(
        run(agent, 'hi', { retry: { maxRetries: 2, initialDelayMs: 1, maxDelayMs: 1 } }),
      );
      expect(server.requests.length - before).toBe(1);
      expect(events.map((e) => e.type)).toEqual([
        'run_started',
        'turn_started',
        'model_request_started',
        'text_delta',
        'run_failed',
      ]);
      const terminal = events.at(-1)!;
      expect(terminal).toMatchObject({
        type: 'run_failed',
        stopReason: 'model_error',
        error: { name: 'ModelOutputError', code: 'malformed_chunk', field },
        partial: [
          { type: 'user', text: 'hi' },
          { type: 'assistant', text: 'Hel', interrupted: true },
        ],
      });
      expect(JSON.stringify(terminal)).not.toMatch(/TypeError|Cannot read|undefined|is not iterable/);
    },
  );
});
