import { describe, expect, it } from 'vitest';
import { anthropicMessages } from '../src/anthropic/index.js';
import { anthropicWire, providerContract } from '../src/node/testing/index.js';

/**
 * The provider contract (loopctl/node/testing, docs/testing.md "Proving a provider adapter") against
 * `anthropicMessages()` (`loopctl/anthropic`, the real @anthropic-ai/sdk) on the suite's local server speaking the
 * Messages API's event grammar (`anthropicWire`): streaming, cancel at every checkpoint, deadlines, retry-after on a
 * 429, rescue of a cut stream and of an in-stream `overloaded_error`, malformed events, usage, and a three-turn tool
 * loop whose thinking block must come back unchanged before the tool results. Thinking is enabled: the kit serves
 * thinking blocks, as the API does only when thinking is on, and then refuses a history whose opening assistant
 * message lost its thinking block.
 */
providerContract(
  { describe, it, expect },
  {
    name: 'anthropicMessages',
    provider: ({ origin }) =>
      anthropicMessages({
        model: 'claude-kit',
        apiKey: 'test-key',
        baseURL: origin,
        maxTokens: 2048,
        thinking: { type: 'enabled', budget_tokens: 1024 },
      }),
    wire: anthropicWire,
  },
);
