import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { defineAgent, openaiChat, openaiResponses, run, type ModelProvider, type RunEvent } from '../src/index.js';
import type { ModelEvent, ModelRequest } from '../src/model/types.js';
import { collectEvents } from '../src/testing/index.js';
import {
  chatCompletion,
  collect,
  responsesBody,
  startOpenAIServer,
  type OpenAIServer,
  type ScriptedResponse,
} from './support/openai-server.js';

/**
 * A streamed request answered with HTTP 200 but not an event stream. A
 * proxy's HTML page fails at once with `code: 'not_event_stream'` naming the
 * content type, after exactly one request (never a retry loop); a server that
 * ignores `stream: true` and answers a complete JSON chat completion (or
 * Responses object) is accepted as the whole response.
 */

type Api = 'chat' | 'responses';

let server: OpenAIServer;
beforeEach(async () => void (server = await startOpenAIServer()));
afterEach(() => server.close());

const provider = (api: Api): ModelProvider => {
  const options = { model: 'gpt-test', apiKey: 'test-key', baseURL: server.baseURL };
  return api === 'chat' ? openaiChat(options) : openaiResponses(options);
};
const request: ModelRequest = {
  instructions: '',
  items: [{ type: 'user', id: 'u1', text: 'hi' }],
  tools: [],
  stream: true,
};
const html: ScriptedResponse = {
  json: '<!doctype html><html><body><h1>Proxy sign-in required</h1></body></html>',
  headers: { 'content-type': 'text/html; charset=utf-8' },
};
const what = { chat: 'a chat completion', responses: 'a Responses object' } as const;

async function runOnce(api: Api, answer: ScriptedResponse): Promise<RunEvent[]> {
  server.enqueue(answer);
  const agent = defineAgent({ name: 'a', instructions: '', model: provider(api) });
  return collectEvents(run(agent, 'hi', { retry: { maxRetries: 2, initialDelayMs: 1, maxDelayMs: 1 } }));
}

describe.each<Api>(['chat', 'responses'])('HTTP 200 that is not an event stream (%s)', (api) => {
  it('an HTML page fails at once: not_event_stream naming the content type, one request, no retry', async () => {
    const events = await runOnce(api, html);
    expect(server.requests).toHaveLength(1);
    expect(events.map((e) => e.type)).toEqual(['run_started', 'turn_started', 'model_request_started', 'run_failed']);
    expect(events.at(-1)).toMatchObject({
      type: 'run_failed',
      stopReason: 'model_error',
      error: {
        name: 'ModelCallError',
        message:
          'the server did not answer with an event stream: HTTP 200 with content-type "text/html; charset=utf-8"',
        code: 'not_event_stream',
        status: 200,
        retryable: false,
      },
    });
  });

  it('the adapter error itself: not retryable, not started', async () => {
    server.enqueue(html);
    const { events, error } = await collect<ModelEvent>(provider(api).call(request));
    expect(events).toEqual([]);
    expect(error).toMatchObject({
      name: 'ModelCallError',
      code: 'not_event_stream',
      status: 200,
      retryable: false,
      streamStarted: false,
    });
  });

  it('a complete JSON answer (the server ignored stream: true) is the response', async () => {
    const body =
      api === 'chat'
        ? chatCompletion({ content: 'Hello from JSON.' }, 'stop')
        : responsesBody({ text: 'Hello from JSON.', usage: [10, 5] });
    const events = await runOnce(api, { json: body });
    expect(server.requests).toHaveLength(1);
    expect(server.requests[0]!.body.stream).toBe(true);
    expect(events.filter((e) => e.type === 'text_delta').map((e) => e.type === 'text_delta' && e.delta)).toEqual([
      'Hello from JSON.',
    ]);
    expect(events.find((e) => e.type === 'model_response_completed')).toMatchObject({
      finishReason: 'stop',
      usage: { inputTokens: 10, outputTokens: 5, totalTokens: 15 },
    });
    expect(events.at(-1)).toMatchObject({ type: 'run_completed', output: 'Hello from JSON.', finishReason: 'stop' });
  });

  it('JSON that is not a complete answer fails at once with not_event_stream, saying what it is not', async () => {
    const events = await runOnce(api, { json: { status: 'ok' } });
    expect(server.requests).toHaveLength(1);
    expect(events.at(-1)).toMatchObject({
      type: 'run_failed',
      stopReason: 'model_error',
      error: {
        name: 'ModelCallError',
        message:
          'the server did not answer with an event stream: HTTP 200 with content-type "application/json", ' +
          `and the body is not ${what[api]}`,
        code: 'not_event_stream',
        retryable: false,
      },
    });
  });
});
