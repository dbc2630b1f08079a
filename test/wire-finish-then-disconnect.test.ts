import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { defineAgent, openaiChat, run } from '../src/index.js';
import type { ModelEvent, ModelRequest } from '../src/model/types.js';
import { collectEvents } from '../src/testing/index.js';
import { collect, repoRoot, sseFrames, startOpenAIServer, type OpenAIServer } from './support/openai-server.js';

/**
 * Chat Completions: a stream that delivered `finish_reason` and then lost its
 * connection before `data: [DONE]` (and before the usage chunk) holds the whole
 * answer. It is accepted as complete, without usage, instead of paying for a
 * rescue request. The fixture is hand-written (test/fixtures/openai/README.md);
 * the server destroys the socket after its last frame.
 */

const frames = sseFrames(
  readFileSync(path.join(repoRoot, 'test/fixtures/openai/chat-finish-then-disconnect.sse'), 'utf8'),
);

let server: OpenAIServer;
beforeEach(async () => void (server = await startOpenAIServer()));
afterEach(() => server.close());

const model = () => openaiChat({ model: 'gpt-test', apiKey: 'test-key', baseURL: server.baseURL });
const request: ModelRequest = {
  instructions: '',
  items: [{ type: 'user', id: 'u1', text: 'hi' }],
  tools: [],
  stream: true,
};

describe('a Chat Completions stream that loses its connection after finish_reason', () => {
  it('the fixture is three chunks ending with finish_reason "stop", no usage, no [DONE]', () => {
    expect(frames).toHaveLength(3);
    expect(JSON.parse(frames[2]!.slice('data: '.length)).choices[0].finish_reason).toBe('stop');
    expect(frames.join('')).not.toContain('[DONE]');
    expect(frames.join('')).not.toContain('usage');
  });

  it('the adapter answers with the complete response (no usage)', async () => {
    server.enqueue({ sse: frames, cutAfter: frames.length });
    const { events, error, completed } = await collect<ModelEvent>(model().call(request));
    expect(error).toBeUndefined();
    expect(completed).toBe(true);
    expect(events).toEqual([
      { type: 'text_delta', delta: 'The answer' },
      { type: 'text_delta', delta: ' is 42.' },
      { type: 'response', response: { text: 'The answer is 42.', toolCalls: [], finishReason: 'stop' } },
    ]);
    const req = server.requests[0]!;
    await req.whenClosed;
    expect(req.finished).toBe(false); // the server really cut the connection
  });

  it('a run completes after one request: no rescue', async () => {
    server.enqueue({ sse: frames, cutAfter: frames.length });
    const agent = defineAgent({ name: 'a', instructions: '', model: model() });
    const events = await collectEvents(run(agent, 'hi'));
    expect(server.requests).toHaveLength(1);
    expect(events.map((e) => e.type)).toEqual([
      'run_started',
      'turn_started',
      'model_request_started',
      'text_delta',
      'text_delta',
      'model_response_completed',
      'turn_completed',
      'run_completed',
    ]);
    expect(events.find((e) => e.type === 'model_response_completed')).toMatchObject({
      finishReason: 'stop',
      usage: { inputTokens: 0, outputTokens: 0, totalTokens: 0 },
    });
    expect(events.at(-1)).toMatchObject({ type: 'run_completed', output: 'The answer is 42.', finishReason: 'stop' });
  });

  it('a connection lost before finish_reason is still a broken stream (retryable, started)', async () => {
    server.enqueue({ sse: frames.slice(0, 2), cutAfter: 2 });
    const { error } = await collect<ModelEvent>(model().call(request));
    expect(error).toMatchObject({ name: 'ModelCallError', retryable: true, streamStarted: true });
  });
});
