/**
 * `anthropicMessages` over the local Anthropic-shaped server: the Messages API's streamed events become loopctl's
 * ModelEvents (text, thinking, tool use with streamed input), the request body is what the API expects (max_tokens
 * default, system, tools, thinking, cache_control markers, output_config), usage carries the cache counts, and stop
 * reasons map to finish reasons. The server refuses any request the real API would refuse, so every request here
 * being accepted is part of each check.
 */
import Anthropic from '@anthropic-ai/sdk';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  anthropicMessages,
  mapStopReason,
  REFUSAL_WITHOUT_TEXT,
  toAnthropicMessages,
  type AnthropicOptions,
} from '../src/anthropic/index.js';
import { requestTimeout } from '../src/model/anthropic/options.js';
import { ConfigurationError } from '../src/errors.js';
import type { Item } from '../src/items.js';
import type { ModelEvent, ModelRequest, ModelResponse } from '../src/model/types.js';
import { readAnthropicFixture, startAnthropicServer, type AnthropicServer } from './support/anthropic-server.js';
import { collect } from './support/openai-server.js';

let server: AnthropicServer;
beforeAll(async () => void (server = await startAnthropicServer()));
afterAll(() => server.close());
afterEach(() => expect(server.rejections()).toEqual([]));

const user = (text: string): Item => ({ type: 'user', id: 'u1', text });
const request = (over: Partial<ModelRequest> = {}): ModelRequest => ({
  instructions: 'Be brief.',
  items: [user('Weather in Paris?')],
  tools: [],
  stream: true,
  ...over,
});
const LOOKUP = {
  name: 'lookup',
  description: 'Looks up the weather of a city.',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};
const provider = (over: Partial<AnthropicOptions> = {}) =>
  anthropicMessages({ model: 'claude-test', apiKey: 'test-key', baseURL: server.baseURL, ...over });
const responseOf = (events: ModelEvent[]): ModelResponse => {
  const last = events.at(-1);
  if (last?.type !== 'response') throw new Error(`no response: ${JSON.stringify(events)}`);
  return last.response;
};
/** Calls once with `answer` queued; returns the events and the request body the server got. */
async function callWith(answer: Parameters<AnthropicServer['enqueue']>[0], req = request(), over = {}) {
  server.enqueue(answer);
  const n = server.requests.length;
  const out = await collect<ModelEvent>(provider(over).call(req));
  expect(out.error).toBeUndefined();
  return { events: out.events, body: server.requests[n]!.body, sent: server.requests[n]! };
}

describe('streaming into ModelEvents', () => {
  it('text: content_block deltas become text_delta (ping skipped), then one response with usage', async () => {
    const { events, body, sent } = await callWith({ fixture: 'text.sse' });
    expect(events).toEqual([
      { type: 'text_delta', delta: 'Hello' },
      { type: 'text_delta', delta: ' from' },
      { type: 'text_delta', delta: ' Claude' },
      { type: 'text_delta', delta: '.' },
      {
        type: 'response',
        response: {
          text: 'Hello from Claude.',
          toolCalls: [],
          finishReason: 'stop',
          usage: { inputTokens: 25, outputTokens: 6, totalTokens: 31, cacheReadTokens: 0, cacheWriteTokens: 0 },
        },
      },
    ]);
    expect(sent.path).toBe('/v1/messages');
    // This SDK sends the key as a bearer token (its docs: "Sent as `Authorization: Bearer <key>`").
    expect(sent.headers['x-api-key'] ?? sent.headers['authorization']).toMatch(/^(Bearer )?test-key$/);
    expect(body).toEqual({
      model: 'claude-test',
      max_tokens: 4096,
      system: [{ type: 'text', text: 'Be brief.' }],
      messages: [{ role: 'user', content: [{ type: 'text', text: 'Weather in Paris?' }] }],
      stream: true,
    });
  });

  it('tool use: tool_call_delta with id and name at content_block_start, then each input_json_delta', async () => {
    const { events, body } = await callWith({ fixture: 'tool-use.sse' }, request({ tools: [LOOKUP] }));
    expect(events.slice(0, -1)).toEqual([
      { type: 'text_delta', delta: 'Let me look that up.' },
      { type: 'tool_call_delta', index: 0, callId: 'toolu_01A', name: 'lookup', argumentsDelta: '' },
      { type: 'tool_call_delta', index: 0, argumentsDelta: '{"city"' },
      { type: 'tool_call_delta', index: 0, argumentsDelta: ': "Par' },
      { type: 'tool_call_delta', index: 0, argumentsDelta: 'is"}' },
    ]);
    const response = responseOf(events);
    expect(response).toMatchObject({
      text: 'Let me look that up.',
      toolCalls: [{ callId: 'toolu_01A', name: 'lookup', arguments: '{"city": "Paris"}' }],
      finishReason: 'tool_calls',
    });
    expect(response.providerParts).toBeUndefined(); // text and tool_use only: the Item says it all
    expect(body.tools).toEqual([{ name: 'lookup', description: LOOKUP.description, input_schema: LOOKUP.parameters }]);
  });

  it('parallel tool calls keep their own index, id and arguments', async () => {
    const { events } = await callWith({ fixture: 'parallel-tools.sse' }, request({ tools: [LOOKUP] }));
    expect(responseOf(events).toolCalls).toEqual([
      { callId: 'toolu_P1', name: 'lookup', arguments: '{"city": "Oslo"}' },
      { callId: 'toolu_P2', name: 'lookup', arguments: '{"city": "Rome"}' },
    ]);
    const starts = events.filter((e) => e.type === 'tool_call_delta' && e.callId !== undefined);
    expect(starts.map((e) => e.type === 'tool_call_delta' && [e.index, e.callId])).toEqual([
      [0, 'toolu_P1'],
      [1, 'toolu_P2'],
    ]);
  });

  it('thinking: thinking_delta → reasoning_delta; the blocks and signatures are kept in providerParts', async () => {
    const thinking = { type: 'enabled', budget_tokens: 2048 } as const;
    const { events, body } = await callWith({ fixture: 'loop-2.sse' }, request({ tools: [LOOKUP] }), {
      thinking,
      maxTokens: 8192,
    });
    expect(body.thinking).toEqual(thinking);
    expect(body.max_tokens).toBe(8192);
    expect(events[0]).toEqual({ type: 'reasoning_delta', delta: 'Paris is sunny. Now Berlin.' });
    const response = responseOf(events);
    expect(response.reasoning).toBe('Paris is sunny. Now Berlin.');
    // Exactly the blocks the stream carried, signature and redacted data byte for byte.
    const fixture = readAnthropicFixture('loop-2.sse');
    const redacted = /"type":"redacted_thinking","data":"([^"]+)"/.exec(fixture)![1];
    const signature = /"signature_delta","signature":"([^"]+)"/.exec(fixture)![1];
    expect(response.providerParts).toEqual({
      family: 'anthropic',
      data: {
        content: [
          { type: 'redacted_thinking', data: redacted },
          { type: 'thinking', thinking: 'Paris is sunny. Now Berlin.', signature },
          { type: 'tool_use', id: 'toolu_L2', name: 'lookup', input: { city: 'Berlin' } },
        ],
      },
    });
    expect(response.usage).toEqual({
      inputTokens: 420, // 40 uncached + 380 read from the cache: every input token
      outputTokens: 61,
      totalTokens: 481,
      cacheReadTokens: 380,
      cacheWriteTokens: 0,
    });
  });

  it('a non-streamed call reads the whole Message', async () => {
    const json = JSON.parse(readAnthropicFixture('message-text.json')) as unknown;
    const { events, body } = await callWith({ json }, request({ stream: false }));
    expect(body.stream).toBe(false);
    expect(events).toEqual([
      {
        type: 'response',
        response: {
          text: 'Hello from a whole message.',
          toolCalls: [],
          finishReason: 'stop',
          usage: { inputTokens: 25, outputTokens: 7, totalTokens: 32, cacheReadTokens: 0, cacheWriteTokens: 0 },
        },
      },
    ]);
  });

  it('a server that ignores stream: true and answers with a whole Message is read as one', async () => {
    const json = JSON.parse(readAnthropicFixture('message-text.json')) as unknown;
    const { events } = await callWith({ json });
    expect(responseOf(events).text).toBe('Hello from a whole message.');
  });
});

describe('stop reasons', () => {
  it('maps every documented stop_reason', () => {
    const reasons = ['end_turn', 'stop_sequence', 'max_tokens', 'model_context_window_exceeded', 'tool_use'];
    expect([...reasons, 'refusal', 'pause_turn', 'new_reason', null].map(mapStopReason)).toEqual([
      'stop',
      'stop',
      'length',
      'length',
      'tool_calls',
      'refusal',
      'pause_turn',
      'other',
      'other',
    ]);
  });

  it('max_tokens → length; refusal → refusal with the text as its refusal', async () => {
    expect(responseOf((await callWith({ fixture: 'max-tokens.sse' })).events).finishReason).toBe('length');
    const refused = responseOf((await callWith({ fixture: 'refusal.sse' })).events);
    expect(refused).toMatchObject({ text: 'I can', finishReason: 'refusal', refusal: 'I can' });
    const whole = await callWith({
      json: { ...JSON.parse(readAnthropicFixture('message-text.json')), content: [], stop_reason: 'refusal' },
    });
    expect(responseOf(whole.events)).toMatchObject({ text: '', refusal: REFUSAL_WITHOUT_TEXT });
  });
});

describe('request body', () => {
  it('prompt caching: cache_control on the system prompt, the last tool and the last block of the history', async () => {
    const items: Item[] = [
      user('Weather in Paris?'),
      {
        type: 'assistant',
        id: 'a1',
        text: '',
        toolCalls: [{ callId: 't1', name: 'lookup', arguments: '{"city":"Paris"}' }],
      },
      { type: 'tool_result', callId: 't1', output: 'sunny', isError: false },
    ];
    const { body } = await callWith(
      { fixture: 'text.sse' },
      request({ items, tools: [LOOKUP, { ...LOOKUP, name: 'other' }] }),
      { cache: { ttl: '1h' } },
    );
    const mark = { type: 'ephemeral', ttl: '1h' };
    expect(body.system).toEqual([{ type: 'text', text: 'Be brief.', cache_control: mark }]);
    expect(body.tools.map((t: { cache_control?: unknown }) => t.cache_control)).toEqual([undefined, mark]);
    expect(body.messages.at(-1)).toEqual({
      role: 'user',
      content: [{ type: 'tool_result', tool_use_id: 't1', content: 'sunny', cache_control: mark }],
    });
    // Without the option no marker at all.
    const plain = await callWith({ fixture: 'text.sse' }, request({ items, tools: [LOOKUP] }));
    expect(JSON.stringify(plain.body)).not.toContain('cache_control');
  });

  it('structured output: output_config.format natively, or the schema in the system prompt', async () => {
    const output = { name: 'answer', schema: { type: 'object', properties: { n: { type: 'number' } } }, strict: true };
    const native = await callWith({ fixture: 'text.sse' }, request({ output }));
    expect(native.body.output_config).toEqual({ format: { type: 'json_schema', schema: output.schema } });
    const asked = await callWith({ fixture: 'text.sse' }, request({ output }), { structuredOutputs: 'instructions' });
    expect(asked.body.output_config).toBeUndefined();
    expect(asked.body.system[0].text).toMatch(/^Be brief\.\n\nYour final answer must be one JSON value/);
  });

  it('extra request fields go through but cannot override what loopctl sets', async () => {
    const { body } = await callWith({ fixture: 'text.sse' }, request(), {
      request: { temperature: 0, model: 'other', max_tokens: 1, system: 'injected', thinking: { type: 'adaptive' } },
    });
    expect(body).toMatchObject({ temperature: 0, model: 'claude-test', max_tokens: 4096 });
    expect(body.system).toEqual([{ type: 'text', text: 'Be brief.' }]);
    expect(body.thinking).toBeUndefined();
  });

  it('a user client keeps its options but gets maxRetries 0 and the timeout per request', async () => {
    const client = new Anthropic({ apiKey: 'user-key', baseURL: server.baseURL, maxRetries: 5, timeout: 1 });
    server.enqueue({ fixture: 'text.sse', delayMs: 30 });
    const ok = await collect<ModelEvent>(anthropicMessages({ model: 'm', client }).call(request()));
    expect(responseOf(ok.events).text).toBe('Hello from Claude.'); // the client's 1 ms timeout was overridden
    server.enqueue({ errorFixture: 'error-529.json', status: 529 });
    const n = server.requests.length;
    const failed = await collect<ModelEvent>(anthropicMessages({ model: 'm', client }).call(request()));
    expect(failed.error).toMatchObject({ status: 529, retryable: true });
    expect(server.requests.length).toBe(n + 1); // the SDK did not retry
  });

  it('SDK timeout per request: the engine deadline + 1 s margin, else timeoutMs, else 600 s', () => {
    expect(requestTimeout({ model: 'm', timeoutMs: 5000 }, request({ timeoutMs: 30_000 }))).toBe(31_000);
    expect(requestTimeout({ model: 'm', timeoutMs: 5000 }, request())).toBe(5000);
    expect(requestTimeout({ model: 'm' }, request())).toBe(600_000);
  });

  it('validates options at construction, naming the field', () => {
    const saved = process.env['ANTHROPIC_API_KEY'];
    delete process.env['ANTHROPIC_API_KEY'];
    try {
      const make = (over: Partial<AnthropicOptions>) => () => anthropicMessages({ model: 'm', apiKey: 'k', ...over });
      expect(() => anthropicMessages({ model: 'm' })).toThrow(ConfigurationError);
      expect(() => anthropicMessages({ model: 'm' })).toThrow(/^apiKey: /);
      expect(make({ model: '' })).toThrow(/^model: /);
      expect(make({ maxTokens: 0 })).toThrow(/^maxTokens: /);
      expect(make({ timeoutMs: -1 })).toThrow(/^timeoutMs: /);
      expect(make({ thinking: { type: 'enabled', budget_tokens: 512 } })).toThrow(/^thinking\.budget_tokens: /);
      expect(make({ thinking: { type: 'enabled', budget_tokens: 4096 } })).toThrow(/below maxTokens 4096/);
      expect(make({ thinking: { type: 'on' } as never })).toThrow(/^thinking: /);
      expect(make({ cache: { ttl: '2h' as never } })).toThrow(/^cache\.ttl: /);
      expect(make({ structuredOutputs: 'auto' as never })).toThrow(/^structuredOutputs: /);
      process.env['ANTHROPIC_API_KEY'] = 'from-env';
      expect(anthropicMessages({ model: 'claude-x', stream: false })).toMatchObject({
        id: 'anthropic:claude-x',
        stream: false,
      });
    } finally {
      if (saved === undefined) delete process.env['ANTHROPIC_API_KEY'];
      else process.env['ANTHROPIC_API_KEY'] = saved;
    }
  });
});

describe('history conversion (toAnthropicMessages)', () => {
  const signed = { type: 'thinking', thinking: 'Let me think.', signature: 'sig-1' };
  const call = { callId: 't1', name: 'lookup', arguments: '{"city":"Paris"}' };

  it('replays an anthropic Item unchanged, its tool_use taking the Item calls; groups results; merges roles', () => {
    const items: Item[] = [
      user('Weather?'),
      {
        type: 'assistant',
        id: 'a1',
        text: 'Checking.',
        toolCalls: [call],
        providerParts: {
          family: 'anthropic',
          data: {
            content: [
              signed,
              { type: 'text', text: 'Checking.' },
              { type: 'tool_use', id: 't1', name: 'lookup', input: { city: 'Paris' } },
            ],
          },
        },
      },
      { type: 'tool_result', callId: 't1', output: 'no such city', isError: true },
      { type: 'user', id: 'u2', text: 'steer: be brief' },
    ];
    expect(toAnthropicMessages('', items)).toEqual({
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'Weather?' }] },
        {
          role: 'assistant',
          content: [
            signed,
            { type: 'text', text: 'Checking.' },
            { type: 'tool_use', id: 't1', name: 'lookup', input: { city: 'Paris' } },
          ],
        },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: 't1', content: 'no such city', is_error: true },
            { type: 'text', text: 'steer: be brief' },
          ],
        },
      ],
    });
  });

  it("another family's providerParts are dropped; an empty interrupted Item is left out", () => {
    const items: Item[] = [
      user('hi'),
      { type: 'assistant', id: 'a0', text: '', toolCalls: [], interrupted: true },
      {
        type: 'assistant',
        id: 'a1',
        text: 'Hello.',
        toolCalls: [],
        providerParts: { family: 'gemini', data: { thoughtSignature: 'xyz' } },
      },
    ];
    expect(toAnthropicMessages('', items).messages).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'hi' }] },
      { role: 'assistant', content: [{ type: 'text', text: 'Hello.' }] },
    ]);
  });

  it('calls repaired by the engine (a different count) keep the thinking and rebuild the rest from the Item', () => {
    const item: Item = {
      type: 'assistant',
      id: 'a1',
      text: '',
      toolCalls: [call, { callId: 't2', name: 'lookup', arguments: 'not json' }],
      providerParts: {
        family: 'anthropic',
        data: { content: [signed, { type: 'tool_use', id: 't1', name: 'lookup', input: { city: 'Paris' } }] },
      },
    };
    expect(toAnthropicMessages('', [user('q'), item]).messages[1]).toEqual({
      role: 'assistant',
      content: [
        signed,
        { type: 'tool_use', id: 't1', name: 'lookup', input: { city: 'Paris' } },
        { type: 'tool_use', id: 't2', name: 'lookup', input: {} },
      ],
    });
  });
});
