import type { FinishReason } from '../../events.js';

/**
 * Gemini `finishReason` values that mean the answer was withheld or cut by a filter: safety, recitation,
 * a blocklist term, prohibited content, sensitive personal data (`SPII`) and their image variants.
 */
export const FILTERED_FINISH_REASONS: ReadonlySet<string> = new Set([
  'SAFETY',
  'RECITATION',
  'BLOCKLIST',
  'PROHIBITED_CONTENT',
  'SPII',
  'IMAGE_SAFETY',
  'IMAGE_PROHIBITED_CONTENT',
  'IMAGE_RECITATION',
]);

/**
 * Maps a Gemini candidate `finishReason` to {@link FinishReason}:
 * - `STOP` → `tool_calls` when the answer made function calls, else `stop`;
 * - `MAX_TOKENS` → `length`;
 * - {@link FILTERED_FINISH_REASONS} (`SAFETY`, `RECITATION`, `BLOCKLIST`, `PROHIBITED_CONTENT`, `SPII`, image
 *   variants) → `content_filter`;
 * - everything else → `other`: `MALFORMED_FUNCTION_CALL`, `UNEXPECTED_TOOL_CALL` and `TOO_MANY_TOOL_CALLS` (the model
 *   wrote a call the API refused to pass on: the response has no call, and the run ends with what text there is),
 *   `LANGUAGE`, `OTHER`, `FINISH_REASON_UNSPECIFIED`, `NO_IMAGE` and values added later.
 */
export function mapGeminiFinishReason(reason: string, hasCalls: boolean): FinishReason {
  if (reason === 'STOP') return hasCalls ? 'tool_calls' : 'stop';
  if (reason === 'MAX_TOKENS') return 'length';
  if (FILTERED_FINISH_REASONS.has(reason)) return 'content_filter';
  return 'other';
}
