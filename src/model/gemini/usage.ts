import type { TokenCounts } from '../../items.js';
import { malformed, type Obj, type WireCode } from '../openai/wire-shape.js';

/**
 * Maps Gemini `usageMetadata` to {@link TokenCounts}:
 * - `inputTokens` = `promptTokenCount` (+ `toolUsePromptTokenCount` when present): every input token, cached or not;
 * - `outputTokens` = `candidatesTokenCount` + `thoughtsTokenCount` (thinking tokens are billed as output, as
 *   OpenAI's `completion_tokens` count reasoning tokens);
 * - `totalTokens` = `totalTokenCount`, else the sum;
 * - `cacheReadTokens` = `cachedContentTokenCount` when the server sent it.
 *
 * @returns undefined when `usage` is absent or has no prompt or candidate count.
 * @throws ModelOutputError (`field` e.g. `usageMetadata.promptTokenCount`) for a count that is not a number.
 */
export function mapGeminiUsage(usage: unknown, code: WireCode): TokenCounts | undefined {
  if (usage === undefined || usage === null) return undefined;
  if (typeof usage !== 'object' || Array.isArray(usage)) return malformed(code, 'usageMetadata', 'an object', usage);
  const u = usage as Obj;
  const count = (key: string): number | undefined => {
    const value = u[key];
    if (value === undefined || value === null) return undefined;
    return typeof value === 'number' ? value : malformed(code, `usageMetadata.${key}`, 'a number', value);
  };
  const prompt = count('promptTokenCount');
  const candidates = count('candidatesTokenCount');
  const thoughts = count('thoughtsTokenCount');
  const toolPrompt = count('toolUsePromptTokenCount');
  const cached = count('cachedContentTokenCount');
  const total = count('totalTokenCount');
  if (prompt === undefined && candidates === undefined && thoughts === undefined) return undefined;
  const inputTokens = (prompt ?? 0) + (toolPrompt ?? 0);
  const outputTokens = (candidates ?? 0) + (thoughts ?? 0);
  return {
    inputTokens,
    outputTokens,
    totalTokens: total ?? inputTokens + outputTokens,
    ...(cached !== undefined ? { cacheReadTokens: cached } : {}),
  };
}
