/**
 * Mixed provider families: an OpenAI primary with an Anthropic fallback (the history so far converted to the
 * Messages format, another family's providerParts left off the wire, the Anthropic server accepting it), a session
 * written with Anthropic thinking then continued on OpenAI (no thinking block or signature on the OpenAI wire), and
 * a sub-agent on Anthropic under an OpenAI parent. Each side is a local server speaking its provider's format.
 */
import { lastValueFrom, toArray } from 'rxjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { anthropicMessages } from '../src/anthropic/index.js';
import { defineAgent, MemorySession, openaiChat, run, tool, type RunEvent } from '../src/index.js';
import type { Item } from '../src/items.js';
import { startAnthropicServer, type AnthropicServer } from './support/anthropic-server.js';
import { startOpenAIServer, textStream, toolCallsStream, type OpenAIServer } from './support/openai-server.js';

let openai: OpenAIServer;
let anthropic: AnthropicServer;
beforeAll(async () => {
  [openai, anthropic] = await Promise.all([startOpenAIServer(), startAnthropicServer()]);
});
afterAll(async () => {
  await Promise.all([openai.close(), anthropic.close()]);
});

const lookup = tool({
  name: 'lookup',
  description: 'The weather of a city.',
  parameters: z.object({ city: z.string() }),
  execute: ({ city }) => (city === 'Paris' ? 'sunny' : 'unknown'),
});
const gpt = () => openaiChat({ model: 'gpt-test', apiKey: 'k', baseURL: openai.baseURL });
const claude = (thinking = false) =>
  anthropicMessages({
    model: 'claude-test',
    apiKey: 'k',
    baseURL: anthropic.baseURL,
    ...(thinking ? { thinking: { type: 'enabled', budget_tokens: 2048 } as const, maxTokens: 8192 } : {}),
  });
const runAll = (events: ReturnType<typeof run>) => lastValueFrom(events.pipe(toArray())) as Promise<RunEvent[]>;

describe('fallback across families: OpenAI primary, Anthropic fallback', () => {
  it('the fallback gets the history in the Messages format, without the other family parts, and is accepted', async () => {
    const [o, a] = [openai.requests.length, anthropic.requests.length];
    openai.enqueue(toolCallsStream([{ id: 'call_1', name: 'lookup', args: { city: 'Paris' } }]), {
      errorFixture: 'error-400-context-length-exceeded.json',
      status: 400,
    });
    anthropic.enqueue({ fixture: 'text.sse' });
    const history: Item[] = [
      { type: 'user', id: 'h1', text: 'Hi' },
      {
        type: 'assistant',
        id: 'h2',
        text: 'Hello!',
        toolCalls: [],
        providerParts: { family: 'gemini', data: { thoughtSignature: 'c2lnbmF0dXJl' } },
      },
      { type: 'user', id: 'h3', text: 'Weather in Paris?' },
    ];
    const agent = defineAgent({
      name: 'w',
      instructions: 'Be brief.',
      model: gpt(),
      fallbackModel: claude(),
      tools: [lookup],
    });
    const events = await runAll(run(agent, history, { retry: false }));
    expect(events.find((e) => e.type === 'fallback_activated')).toMatchObject({
      from: 'openai:gpt-test',
      to: 'anthropic:claude-test',
    });
    expect(events.at(-1)).toMatchObject({ type: 'run_completed', output: 'Hello from Claude.' });
    expect(openai.requests.length - o).toBe(2);
    const sent = anthropic.requests[a]!.body;
    expect(sent.system).toEqual([{ type: 'text', text: 'Be brief.' }]);
    expect(sent.messages).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'Hi' }] },
      { role: 'assistant', content: [{ type: 'text', text: 'Hello!' }] }, // the gemini part is not on this wire
      { role: 'user', content: [{ type: 'text', text: 'Weather in Paris?' }] },
      { role: 'assistant', content: [{ type: 'tool_use', id: 'call_1', name: 'lookup', input: { city: 'Paris' } }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'call_1', content: 'sunny' }] },
    ]);
    expect(anthropic.rejections()).toEqual([]);
  });
});

describe('a session handed from Anthropic (with thinking) to OpenAI', () => {
  it('the OpenAI request carries the text and calls, no thinking block, signature or redacted data', async () => {
    const session = new MemorySession();
    anthropic.enqueue({ fixture: 'loop-1.sse' }, { fixture: 'loop-3.sse' });
    const first = defineAgent({ name: 'w', instructions: '', model: claude(true), tools: [lookup] });
    expect((await runAll(run(first, 'Weather in Paris?', { session }))).at(-1)).toMatchObject({
      type: 'run_completed',
    });
    const stored = await session.load();
    expect(stored.filter((i) => i.type === 'assistant').map((i) => i.providerParts?.family)).toEqual([
      'anthropic',
      'anthropic',
    ]);
    const o = openai.requests.length;
    openai.enqueue(textStream('Rome is warm.'));
    const second = defineAgent({ name: 'w', instructions: '', model: gpt(), tools: [lookup] });
    expect((await runAll(run(second, 'And Rome?', { session }))).at(-1)).toMatchObject({ output: 'Rome is warm.' });
    const wire = openai.requests[o]!.body;
    expect(JSON.stringify(wire)).not.toMatch(/thinking|signature|redacted/);
    expect(wire.messages.filter((m: { role: string }) => m.role !== 'user')).toEqual([
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'toolu_L1', type: 'function', function: { name: 'lookup', arguments: '{"city": "Paris"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'toolu_L1', content: 'sunny' },
      { role: 'assistant', content: 'Paris is sunny and Berlin is cloudy.' },
    ]);
  });
});

describe('a sub-agent on Anthropic under an OpenAI parent', () => {
  it('the parent calls it as a tool; its run goes to the Anthropic server, its answer back to OpenAI', async () => {
    const [o, a] = [openai.requests.length, anthropic.requests.length];
    const researcher = defineAgent({ name: 'researcher', instructions: 'Research.', model: claude() });
    const parent = defineAgent({
      name: 'lead',
      instructions: 'Delegate.',
      model: gpt(),
      tools: [researcher.asTool({ name: 'ask_researcher', description: 'Asks the researcher.' })],
    });
    openai.enqueue(toolCallsStream([{ id: 'call_r', name: 'ask_researcher', args: { input: 'say hello' } }]));
    anthropic.enqueue({ fixture: 'text.sse' });
    openai.enqueue(textStream('The researcher said hello.'));
    const events = await runAll(run(parent, 'Ask the researcher'));
    expect(events.at(-1)).toMatchObject({ type: 'run_completed', output: 'The researcher said hello.' });
    const relayed = events.flatMap((e) => (e.type === 'subrun_event' ? [e.event.type] : []));
    expect(relayed).toContain('model_response_completed');
    expect(anthropic.requests[a]!.body.messages).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'say hello' }] },
    ]);
    const back = openai.requests[o + 1]!.body.messages.at(-1);
    expect(back).toEqual({ role: 'tool', tool_call_id: 'call_r', content: 'Hello from Claude.' });
    // The run's usage sums both families: OpenAI 20 + 30 in, 10 + 5 out; the Anthropic sub-run 25 in, 6 out.
    expect(events.at(-1)).toMatchObject({ usage: { inputTokens: 75, outputTokens: 21, reported: true } });
    expect(anthropic.rejections()).toEqual([]);
  });
});
