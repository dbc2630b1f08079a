import { modelName } from './family.js';

/**
 * Context windows of the common models, in tokens (input and output together, as each vendor publishes it), by
 * the start of the model's name: the longest prefix that matches wins (`gpt-4o-mini-2024-07-18` → `gpt-4o-mini`).
 * An agent's `contextWindow` overrides it; a model not in the table has no known window.
 */
export const CONTEXT_WINDOWS: Readonly<Record<string, number>> = Object.freeze({
  // OpenAI
  'gpt-5': 400_000,
  'gpt-4.1': 1_047_576,
  'gpt-4o': 128_000,
  'gpt-4-turbo': 128_000,
  'gpt-4': 8_192,
  'gpt-3.5-turbo': 16_385,
  o1: 200_000,
  'o1-mini': 128_000,
  o3: 200_000,
  'o4-mini': 200_000,
  // Anthropic
  'claude-opus-4': 200_000,
  'claude-sonnet-4': 200_000,
  'claude-haiku-4': 200_000,
  'claude-3-7-sonnet': 200_000,
  'claude-3-5-sonnet': 200_000,
  'claude-3-5-haiku': 200_000,
  'claude-3-opus': 200_000,
  'claude-3-haiku': 200_000,
  // Gemini
  'gemini-2.5-pro': 1_048_576,
  'gemini-2.5-flash': 1_048_576,
  'gemini-2.0-flash': 1_048_576,
  'gemini-1.5-pro': 2_097_152,
  'gemini-1.5-flash': 1_048_576,
});

/**
 * The context window of a model (`ModelProvider.id`, e.g. `openai:gpt-4o-mini`), in tokens: `override` when given
 * (an agent's `contextWindow`), else the longest prefix of the model's name in `table` (default
 * {@link CONTEXT_WINDOWS}), else undefined.
 */
export function contextWindowOf(
  modelId: string,
  override?: number,
  table: Readonly<Record<string, number>> = CONTEXT_WINDOWS,
): number | undefined {
  if (override !== undefined) return override;
  const name = modelName(modelId).toLowerCase();
  let best: string | undefined;
  for (const prefix of Object.keys(table)) {
    if (name.startsWith(prefix) && (best === undefined || prefix.length > best.length)) best = prefix;
  }
  return best === undefined ? undefined : table[best];
}
