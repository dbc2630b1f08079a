/**
 * What `anthropicWire` (loopctl/node/testing) encodes beyond what `providerContract` asks of every kit, read back by
 * the real adapter (`anthropicMessages`, @anthropic-ai/sdk) through the suite's own server: a 529 `overloaded_error`
 * with `retry-after` is a retryable `ModelCallError` with that delay; a 400 is not retryable; a whole Message with a
 * thinking block comes back as reasoning with its signed block kept in `providerParts`.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { anthropicMessages } from '../src/anthropic/index.js';
import { ModelCallError } from '../src/errors.js';
import type { ModelEvent, ModelRequest } from '../src/model/types.js';
import { anthropicKitSignature, anthropicWire, startWireServer, type WireServer } from '../src/node/testing/index.js';
import { collect } from './support/openai-server.js';

let server: WireServer | undefined;
afterEach(() => server?.close());

const request = (stream: boolean): ModelRequest => ({
  instructions: 'Be brief.',
  items: [{ type: 'user', id: 'u', text: 'hi' }],
  tools: [],
  stream,
});

async function callWith(script: Parameters<WireServer['enqueue']>[0], stream = true) {
  server = await startWireServer(anthropicWire);
  server.enqueue(script);
  const provider = anthropicMessages({ model: 'claude-kit', apiKey: 'k', baseURL: server.origin });
  return collect<ModelEvent>(provider.call(request(stream)));
}

describe('anthropicWire read by anthropicMessages', () => {
  it('a 529 overloaded_error with retry-after 2 s: retryable, retryAfterMs 2000, code overloaded_error', async () => {
    const reply = anthropicWire.error({ status: 529, message: 'Overloaded', retryAfterMs: 2000 });
    expect(reply).toMatchObject({ status: 529, headers: { 'retry-after': '2' } });
    const { error } = await callWith({ reply });
    expect(error).toBeInstanceOf(ModelCallError);
    const e = error as ModelCallError;
    expect([e.status, e.retryable, e.retryAfterMs, e.code]).toEqual([529, true, 2000, 'overloaded_error']);
  });

  it('a 400 invalid_request_error: not retryable', async () => {
    const { error } = await callWith({ reply: anthropicWire.error({ status: 400, message: 'bad' }) });
    const e = error as ModelCallError;
    expect([e.status, e.retryable, e.code]).toEqual([400, false, 'invalid_request_error']);
  });

  it('a whole Message with reasoning: the thinking block, signed from its text, kept unchanged', async () => {
    const answer = {
      reasoning: ['Think.'],
      text: ['Done.'],
      toolCalls: [],
      finishReason: 'stop',
      usage: { inputTokens: 3, outputTokens: 2 },
    } as const;
    const { events, error } = await callWith({ answer }, false);
    expect(error).toBe(undefined);
    const response = events.find((e) => e.type === 'response');
    const content = (response as { response: { providerParts?: { data: { content: unknown[] } } } }).response
      .providerParts?.data.content;
    expect(content?.[0]).toEqual({
      type: 'thinking',
      thinking: 'Think.',
      signature: anthropicKitSignature('Think.', []),
    });
  });
});
