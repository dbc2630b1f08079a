import { describe, expect, it } from 'vitest';
import { gemini } from '../src/model/gemini/index.js';
import { geminiWire, providerContract } from '../src/node/testing/index.js';

/**
 * The provider contract (loopctl/node/testing, docs/testing.md "Proving a provider adapter") against `gemini()`
 * (`loopctl/gemini`, the real @google/genai SDK) on the suite's local server speaking Gemini's wire format
 * (`geminiWire`): streaming, cancel at every checkpoint, deadlines, retry-after from RetryInfo, rescue, malformed
 * events, usage, and a three-turn tool loop whose thought signatures must come back unchanged.
 */
providerContract(
  { describe, it, expect },
  {
    name: 'gemini',
    provider: ({ origin }) => gemini({ model: 'gemini-kit', apiKey: 'test-key', baseURL: origin }),
    wire: geminiWire,
  },
);
