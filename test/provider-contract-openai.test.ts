import { describe, expect, it } from 'vitest';
import { openaiChatKit, openaiResponsesKit, providerContract } from '../src/node/testing/index.js';

/**
 * The provider contract (loopctl/node/testing, docs/testing.md "Proving a provider adapter") against
 * both OpenAI adapters, each on the suite's local server speaking its wire format and refusing what
 * the real API refuses: streaming, cancel at every checkpoint, deadlines, retry-after, rescue,
 * malformed events, usage and a three-turn tool loop valid on the wire.
 */
providerContract({ describe, it, expect }, openaiChatKit());
providerContract({ describe, it, expect }, openaiResponsesKit());
