/**
 * Failures of the Messages API classified for recovery: 429 and 529 (`overloaded_error`) retryable with their
 * `retry-after`, other 4xx not, an `error` event mid-stream retryable when it is `overloaded_error`, a cut stream
 * retryable (and rescued by the engine with a non-streamed request), a connection lost after the stop_reason losing
 * nothing, and malformed events a `ModelOutputError` naming the field.
 */
import { APIError } from '@anthropic-ai/sdk';
import { lastValueFrom, toArray } from 'rxjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { anthropicMessages } from '../src/anthropic/index.js';
import { defineAgent } from '../src/engine/define-agent.js';
import { run } from '../src/engine/run.js';
import { ModelCallError, ModelOutputError } from '../src/errors.js';
import type { ModelEvent, ModelRequest } from '../src/model/types.js';
import {
  anthropicEvent,
  anthropicMessage,
  readAnthropicFixture,
  startAnthropicServer,
  type AnthropicAnswer,
  type AnthropicServer,
} from './support/anthropic-server.js';
import { collect, sseFrames } from './support/openai-server.js';

let server: AnthropicServer;
beforeAll(async () => void (server = await startAnthropicServer()));
afterAll(() => server.close());

const request = (stream = true): ModelRequest => ({
  instructions: '',
  items: [{ type: 'user', id: 'u', text: 'hi' }],
  tools: [],
  stream,
});
const provider = () => anthropicMessages({ model: 'claude-test', apiKey: 'k', baseURL: server.baseURL });

async function failWith(answer: AnthropicAnswer, stream = true) {
  server.enqueue(answer);
  const { events, error } = await collect<ModelEvent>(provider().call(request(stream)));
  expect(error).toBeInstanceOf(ModelCallError);
  const { status, retryable, retryAfterMs, code, streamStarted } = error as ModelCallError;
  return { events, status, retryable, retryAfterMs, code, streamStarted, message: (error as Error).message };
}

describe('HTTP errors', () => {
  const cases = [
    ['error-429.json', 429, true, 'rate_limit_error', 7000],
    ['error-529.json', 529, true, 'overloaded_error', 2000],
    ['error-400.json', 400, false, 'invalid_request_error', undefined],
    ['error-401.json', 401, false, 'authentication_error', undefined],
  ] as const;
  for (const [file, status, retryable, code, retryAfterMs] of cases) {
    it(`${file} → ${status}, retryable ${retryable}, code ${code}, retry-after ${retryAfterMs ?? 'none'}`, async () => {
      for (const stream of [true, false]) {
        const got = await failWith({ errorFixture: file, status }, stream);
        expect(got).toMatchObject({ events: [], status, retryable, code, retryAfterMs, streamStarted: false });
        expect(got.message).toContain(code);
      }
    });
  }

  it('x-should-retry overrides the status rule; a 500 is retryable', async () => {
    const body = { type: 'error', error: { type: 'api_error', message: 'Internal server error' } };
    expect(await failWith({ json: body, status: 500 })).toMatchObject({ retryable: true, code: 'api_error' });
    const pinned = { json: body, status: 500, headers: { 'x-should-retry': 'false' } };
    expect(await failWith(pinned)).toMatchObject({ retryable: false });
  });

  it('a history the API refuses (an unpaired tool_use) is a 400 from the server: not retryable, saying why', async () => {
    const n = server.requests.length;
    const items: ModelRequest['items'] = [
      { type: 'user', id: 'u', text: 'hi' },
      { type: 'assistant', id: 'a', text: '', toolCalls: [{ callId: 'toolu_X', name: 'f', arguments: '{}' }] },
      { type: 'user', id: 'u2', text: 'and?' },
    ];
    const { error } = await collect<ModelEvent>(provider().call({ ...request(), items }));
    expect(error).toMatchObject({ status: 400, retryable: false, code: 'invalid_request_error' });
    expect((error as Error).message).toContain('`tool_use` ids were found without `tool_result` blocks');
    expect(server.requests[n]!.rejected).toMatch(/toolu_X/);
  });
});

describe('errors inside a 200 stream', () => {
  it('an overloaded_error event mid-stream is retryable, after the text that came before it', async () => {
    const got = await failWith({ fixture: 'error-event-overloaded.sse' });
    expect(got).toMatchObject({ status: undefined, retryable: true, code: 'overloaded_error', streamStarted: true });
    expect(got.events).toEqual([{ type: 'text_delta', delta: 'Partial ' }]);
  });

  it('an invalid_request_error event is not retryable', async () => {
    const got = await failWith({ fixture: 'error-event-invalid.sse' });
    expect(got).toMatchObject({ retryable: false, code: 'invalid_request_error' });
  });

  it('a cut stream is a retryable stream_truncated-or-connection error with streamStarted', async () => {
    const got = await failWith({ fixture: 'text.sse', cutAfter: 4 });
    expect(got).toMatchObject({ retryable: true, streamStarted: true });
    expect(got.events).toEqual([
      { type: 'text_delta', delta: 'Hello' },
      { type: 'text_delta', delta: ' from' },
    ]);
  });

  it('a connection lost after the stop_reason (before message_stop) loses nothing: the answer is returned', async () => {
    const frames = sseFrames(readAnthropicFixture('text.sse'));
    server.enqueue({ sse: frames, cutAfter: frames.length - 1 });
    const { events, error } = await collect<ModelEvent>(provider().call(request()));
    expect(error).toBeUndefined();
    expect(events.at(-1)).toMatchObject({ type: 'response', response: { text: 'Hello from Claude.' } });
  });

  it('a stream that ends cleanly before its stop_reason is stream_truncated, retryable', async () => {
    const frames = sseFrames(readAnthropicFixture('text.sse'));
    const got = await failWith({ sse: frames.slice(0, 4) });
    expect(got).toMatchObject({ code: 'stream_truncated', retryable: true, streamStarted: true });
  });

  it('a 200 that is not an event stream and not a Message fails not_event_stream', async () => {
    const got = await failWith({ json: '<html>proxy</html>', headers: { 'content-type': 'text/html' } });
    expect(got).toMatchObject({ code: 'not_event_stream', retryable: false, status: 200 });
  });
});

describe('malformed events become a ModelOutputError naming the field', () => {
  const start = sseFrames(readAnthropicFixture('text.sse'))[0]!;
  const cases: [string, string[], string][] = [
    [
      'a delta for a block never started',
      [anthropicEvent({ type: 'content_block_delta', index: 3, delta: { type: 'text_delta', text: 'x' } })],
      'content_block_delta.index',
    ],
    [
      'a text delta that is not a string',
      [
        anthropicEvent({ type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }),
        anthropicEvent({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 42 } }),
      ],
      'content_block_delta.delta.text',
    ],
    [
      'a tool_use block without an id',
      [anthropicEvent({ type: 'content_block_start', index: 0, content_block: { type: 'tool_use', name: 'x' } })],
      'content_block_start.content_block.id',
    ],
    ['a message_delta without delta', [anthropicEvent({ type: 'message_delta', usage: {} })], 'message_delta.delta'],
  ];
  for (const [what, frames, field] of cases) {
    it(`${what} → field ${field}`, async () => {
      server.enqueue({ sse: [start, ...frames] });
      const { error } = await collect<ModelEvent>(provider().call(request()));
      expect(error).toBeInstanceOf(ModelOutputError);
      expect(error).toMatchObject({ code: 'malformed_chunk', field });
      expect((error as Error).message).toContain(field);
    });
  }

  it('a whole Message with content of the wrong shape → malformed_response naming it', async () => {
    server.enqueue({ json: anthropicMessage([{ type: 'text', text: 7 }]) });
    const { error } = await collect<ModelEvent>(provider().call(request(false)));
    expect(error).toMatchObject({ code: 'malformed_response', field: 'content[0].text' });
  });

  it('data that is not JSON is invalid_json, not retryable', async () => {
    const got = await failWith({ sse: [start, 'event: content_block_start\ndata: {not json\n\n'] });
    expect(got).toMatchObject({ code: 'invalid_json', retryable: false });
  });
});

describe('recovery through the engine', () => {
  it('a stream cut mid-answer is rescued once by a non-streamed request, and the run completes', async () => {
    const n = server.requests.length;
    server.enqueue(
      { fixture: 'text.sse', cutAfter: 4 },
      { json: JSON.parse(readAnthropicFixture('message-text.json')) as unknown },
    );
    const agent = defineAgent({ name: 'a', instructions: '', model: provider() });
    const events = await lastValueFrom(run(agent, 'hi').pipe(toArray()));
    const started = events.filter((e) => e.type === 'model_request_started');
    expect(started.map((e) => e.type === 'model_request_started' && [e.stream, e.cause])).toEqual([
      [true, undefined],
      [false, 'rescue'],
    ]);
    expect(events.at(-1)).toMatchObject({ type: 'run_completed', output: 'Hello from a whole message.' });
    expect(server.requests.slice(n).map((r) => r.body.stream)).toEqual([true, false]);
  });

  it('an overloaded_error event mid-stream is rescued the same way', async () => {
    server.enqueue(
      { fixture: 'error-event-overloaded.sse' },
      { json: anthropicMessage([{ type: 'text', text: 'ok' }]) },
    );
    const agent = defineAgent({ name: 'a', instructions: '', model: provider() });
    const events = await lastValueFrom(run(agent, 'hi').pipe(toArray()));
    expect(events.at(-1)).toMatchObject({ type: 'run_completed', output: 'ok' });
  });

  it('the SDK error is the cause, so its request id is at hand', async () => {
    server.enqueue({ errorFixture: 'error-429.json', status: 429 });
    const { error } = await collect<ModelEvent>(provider().call(request()));
    expect((error as ModelCallError).cause).toBeInstanceOf(APIError);
    expect(((error as ModelCallError).cause as APIError).requestID).toBe('req_429');
  });
});
