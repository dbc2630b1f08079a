/**
 * Without the optional `gpt-tokenizer` (its import fails, as when it is not installed), `loadTokenizer('openai')`
 * resolves false and the OpenAI family's estimate stays the documented fallback (docs/long-runs.md, "Token
 * accounting").
 */
import { describe, expect, it, vi } from 'vitest';
import { CHARS_PER_TOKEN, estimateInputTokens, loadTokenizer } from '../src/index.js';

vi.mock('gpt-tokenizer/encoding/o200k_base', () => {
  throw new Error("Cannot find package 'gpt-tokenizer'");
});

describe('without gpt-tokenizer', () => {
  it('loadTokenizer resolves false and the estimate is the characters-per-token fallback', async () => {
    expect(await loadTokenizer('openai')).toBe(false);
    const text = 'The quick brown fox jumps over the lazy dog.'; // 44 characters; 10 o200k tokens
    const request = { instructions: text, items: [], tools: [] };
    expect(estimateInputTokens(request, 'openai')).toBe(Math.ceil(text.length / CHARS_PER_TOKEN.openai + 3));
    expect(estimateInputTokens(request, 'openai')).toBe(14);
  });
});
