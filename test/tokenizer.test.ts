/**
 * The OpenAI family's tokenizer (docs/long-runs.md, "Token accounting"): `loadTokenizer('openai')` loads the
 * optional `gpt-tokenizer` once (a dynamic import); from then on the family's estimates count every text sent with
 * its o200k_base encoding, the calibration still applies, and the other families keep the fallback. Without a load
 * the fallback applies (test/tokenizer-missing.test.ts: the import failing).
 */
import { countTokens, encode } from 'gpt-tokenizer/encoding/o200k_base';
import { describe, expect, it } from 'vitest';
import { BudgetMeter } from '../src/engine/budget/meter.js';
import { CHARS_PER_TOKEN, estimateInputTokens, loadTokenizer, type Item } from '../src/index.js';
import type { ModelProvider } from '../src/model/types.js';

const FOX = 'The quick brown fox jumps over the lazy dog.'; // 44 characters
const only = (instructions: string) => ({ instructions, items: [], tools: [] });
const plain = (text: string) => countTokens(text, { disallowedSpecial: new Set() });

describe('the OpenAI family counts with gpt-tokenizer once it is loaded', () => {
  it('before the load the fallback applies; loadTokenizer resolves true, once', async () => {
    expect(estimateInputTokens(only(FOX), 'openai')).toBe(Math.ceil(FOX.length / CHARS_PER_TOKEN.openai + 3)); // 14
    const first = loadTokenizer('openai');
    expect(loadTokenizer('openai')).toBe(first);
    expect(await first).toBe(true);
  });

  it('a known string counts as its o200k_base encoding, plus the tokens of its message', () => {
    expect(encode(FOX)).toEqual([976, 4853, 19705, 68347, 65613, 1072, 290, 29082, 6446, 13]);
    expect(estimateInputTokens(only(FOX), 'openai')).toBe(10 + 3);
  });

  it('every text sent counts: Items, tool calls and results, the tools and the output schema', () => {
    const code = 'function add(a, b) { return a + b; }';
    const items: Item[] = [
      { type: 'user', id: 'u', text: code },
      {
        type: 'assistant',
        id: 'a',
        text: 'Reading it.',
        toolCalls: [{ callId: 'call_1', name: 'read', arguments: '{"path":"add.js"}' }],
      },
      { type: 'tool_result', callId: 'call_1', output: 'export { add };', isError: false },
    ];
    const tools = [{ name: 'read', description: 'reads a file', parameters: { type: 'object' } }];
    const output = {
      name: 'answer',
      schema: { type: 'object', properties: { ok: { type: 'boolean' } } },
      strict: true,
    };
    const texts = [FOX, code, 'Reading it.', 'read', '{"path":"add.js"}', 'call_1', 'export { add };', 'call_1'];
    const expected =
      texts.reduce((n, t) => n + plain(t), 0) + plain(JSON.stringify(tools)) + plain(JSON.stringify(output.schema));
    expect(estimateInputTokens({ instructions: FOX, items, tools, output }, 'openai')).toBe(expected + 4 * 3);
    expect(plain(code)).toBe(13); // the fallback would say 9
  });

  it('special-token text in a message counts as plain text (it is sent as text)', () => {
    const text = 'a <|endoftext|> b';
    expect(estimateInputTokens(only(text), 'openai')).toBe(plain(text) + 3);
    expect(() => countTokens(text)).toThrow(/special token/);
  });

  it('the calibration still applies to the counted estimate', () => {
    const meter = new BudgetMeter(undefined, undefined);
    const model: ModelProvider = { id: 'openai:gpt-4o', call: () => [] as never };
    const raw = meter.estimate(only(FOX), model).raw;
    expect(raw).toBe(13);
    meter.calibration.measure(raw, 26);
    expect(meter.estimate(only(FOX), model)).toMatchObject({ raw: 13, inputTokens: 26, family: 'openai' });
  });

  it('the other families have no library: loadTokenizer resolves false, their fallback stays', async () => {
    expect(await loadTokenizer('anthropic')).toBe(false);
    expect(await loadTokenizer('gemini')).toBe(false);
    expect(estimateInputTokens(only(FOX), 'anthropic')).toBe(Math.ceil(FOX.length / CHARS_PER_TOKEN.anthropic + 3));
  });
});
