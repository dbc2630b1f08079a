/**
 * A saved session whose `providerParts` were edited out of shape (by hand, or by a broken writer) still continues:
 * the Anthropic and Gemini adapters replay their own family's parts only when every block / part has the shape the
 * API takes, and otherwise rebuild the turn from the Item, so the local server speaking each wire accepts the
 * request instead of the API refusing every later request of that conversation.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { anthropicMessages, wireBlockFault } from '../src/anthropic/index.js';
import type { AssistantItem, Item } from '../src/items.js';
import { gemini, geminiPartFault } from '../src/model/gemini/index.js';
import type { ModelRequest } from '../src/model/types.js';
import { anthropicTextStream, startAnthropicServer, type AnthropicServer } from './support/anthropic-server.js';
import { geminiText, startGeminiServer, type GeminiServer } from './support/gemini-server.js';
import { collect } from './support/openai-server.js';

let anthropic: AnthropicServer;
let google: GeminiServer;
beforeAll(async () => {
  [anthropic, google] = await Promise.all([startAnthropicServer(), startGeminiServer()]);
});
afterAll(async () => {
  await Promise.all([anthropic.close(), google.close()]);
});

const history = (answer: AssistantItem): Item[] => [
  { type: 'user', id: 'u1', text: 'Weather in Paris?' },
  answer,
  { type: 'user', id: 'u2', text: 'And tomorrow?' },
];
const request = (items: Item[]): ModelRequest => ({ instructions: 'Be brief.', items, tools: [], stream: true });
const answer = (family: string, data: unknown): AssistantItem => ({
  type: 'assistant',
  id: 'a1',
  text: 'It is sunny.',
  toolCalls: [],
  providerParts: { family, data: data as never },
});

describe('Anthropic: stored content blocks out of shape are not replayed', () => {
  const edited: [string, unknown][] = [
    ['a text block without text', { content: [{ type: 'text' }] }],
    ['an empty text block', { content: [{ type: 'text', text: '' }] }],
    ['a thinking block without its signature', { content: [{ type: 'thinking', thinking: 'hm' }] }],
    ['redacted thinking without data', { content: [{ type: 'redacted_thinking' }, { type: 'text', text: 'x' }] }],
    ['a block that is not an object', { content: ['text'] }],
  ];
  for (const [what, data] of edited) {
    it(`${what}: the turn is rebuilt from the Item and the server accepts the request`, async () => {
      const n = anthropic.requests.length;
      anthropic.enqueue(anthropicTextStream('Sunny again.'));
      const model = anthropicMessages({ model: 'claude-test', apiKey: 'k', baseURL: anthropic.baseURL });
      const { completed, error } = await collect(model.call(request(history(answer('anthropic', data)))));
      console.log(`anthropic, ${what}: completed=${completed}, refusals=${JSON.stringify(anthropic.rejections())}`);
      expect(error).toBeUndefined();
      expect(completed).toBe(true);
      expect(anthropic.rejections()).toEqual([]);
      expect(anthropic.requests[n]!.body.messages[1]).toEqual({
        role: 'assistant',
        content: [{ type: 'text', text: 'It is sunny.' }],
      });
    });
  }

  it('the rule names what the API would refuse, and passes the blocks the API sent', () => {
    expect(wireBlockFault({ type: 'text', text: '' })).toMatch(/non-empty/);
    expect(wireBlockFault({ type: 'thinking', thinking: 'x' })).toMatch(/^signature: /);
    expect(wireBlockFault({ type: 'thinking', thinking: 'x', signature: 'S' })).toBeUndefined();
    expect(wireBlockFault({ type: 'redacted_thinking', data: 'D' })).toBeUndefined();
    expect(wireBlockFault({ type: 'server_tool_use', id: 's', name: 'web_search', input: {} })).toBeUndefined();
    expect(wireBlockFault({ type: 7 })).toMatch(/^type: /);
  });
});

describe('Gemini: stored parts out of shape are not replayed', () => {
  const edited: [string, unknown][] = [
    ['a part without data', { parts: [{}] }],
    ['a part whose text is a number', { parts: [{ text: 42 }] }],
    ['a part with two data fields', { parts: [{ text: 'a', functionResponse: { name: 'f', response: {} } }] }],
    ['an empty thought signature', { parts: [{ text: 'It is sunny.', thoughtSignature: '' }] }],
    ['a thought flag that is not a boolean', { parts: [{ text: 'hm', thought: 'yes' }] }],
  ];
  for (const [what, data] of edited) {
    it(`${what}: the turn is rebuilt from the Item and the server accepts the request`, async () => {
      const n = google.requests.length;
      google.enqueue(geminiText('Sunny again.'));
      const model = gemini({ model: 'gemini-test', apiKey: 'k', baseURL: google.url });
      const { completed, error } = await collect(model.call(request(history(answer('gemini', data)))));
      console.log(`gemini, ${what}: completed=${completed}, refused=${google.rejected().length}`);
      expect(error).toBeUndefined();
      expect(completed).toBe(true);
      expect(google.rejected()).toEqual([]);
      expect(google.requests[n]!.body.contents[1]).toEqual({ role: 'model', parts: [{ text: 'It is sunny.' }] });
    });
  }

  it('the local server refuses such a part, as Gemini does', async () => {
    const n = google.requests.length;
    const body = { contents: [{ role: 'user', parts: [{ text: 'hi' }, { thought: true }] }] };
    const res = await fetch(`${google.url}/v1beta/models/m:generateContent`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    expect(res.status).toBe(400);
    expect(google.requests[n]!.rejected).toMatch(/^contents\[0\]\.parts\[1\]: required oneof field 'data'/);
  });

  it('the rule passes the parts Gemini sends', () => {
    expect(geminiPartFault({ text: '', thoughtSignature: 'S' })).toBeUndefined();
    expect(geminiPartFault({ text: 'plan', thought: true })).toBeUndefined();
    expect(geminiPartFault({ functionCall: { name: 'f', args: {} }, thoughtSignature: 'S' })).toBeUndefined();
    expect(geminiPartFault({ executableCode: { language: 'PYTHON', code: 'print(1)' } })).toBeUndefined();
    expect(geminiPartFault({ functionCall: { args: {} } })).toMatch(/name/);
  });
});
