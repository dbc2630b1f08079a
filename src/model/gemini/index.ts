/**
 * The `loopctl/gemini` entry: `gemini(options)`, a `ModelProvider` over Gemini's `generateContent` /
 * `streamGenerateContent` through the optional peer dependency `@google/genai` (2.x), plus the pure conversions and
 * the error classification it uses. See docs/providers.md, "Gemini".
 */
export { gemini, GEMINI_TIMEOUT_MARGIN_MS, type GeminiOptions } from './provider.js';
export {
  toGeminiContents,
  toGeminiTools,
  type ContentsOptions,
  type GeminiContent,
  type GeminiFunctionDeclaration,
} from './contents.js';
export { GeminiResponseReader } from './response-reader.js';
export { mapGeminiFinishReason, FILTERED_FINISH_REASONS } from './finish-reason.js';
export { mapGeminiUsage } from './usage.js';
export { toGeminiCallError, retryDelayMs, RETRYABLE_STATUSES } from './errors.js';
export {
  GEMINI_FAMILY,
  SKIP_THOUGHT_SIGNATURE,
  geminiPartFault,
  replayableParts,
  toProviderParts,
  type GeminiPart,
  type GeminiPartsData,
} from './parts.js';
