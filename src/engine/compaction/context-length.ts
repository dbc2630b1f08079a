import { isModelCallError } from '../../errors.js';

/** What providers say of a request over the model's context window (OpenAI, Anthropic, Gemini, compatible servers). */
const TOO_LONG = new RegExp(
  [
    'context[ _-]?length',
    'context[ _-]?window',
    'prompt is too long',
    'too many (input )?tokens',
    'input token count .* exceeds',
    'exceeds the maximum number of tokens',
    'maximum context',
    'request too large',
  ].join('|'),
  'i',
);

/**
 * True for a provider's refusal of a request as too long for the model's context window (docs/long-runs.md,
 * "Compaction"): a `ModelCallError` with OpenAI's code `context_length_exceeded`, or a 400 / 413 whose message
 * says so (Anthropic's `prompt is too long: … tokens > … maximum`, Gemini's `The input token count (…) exceeds
 * the maximum number of tokens allowed`, compatible servers' `maximum context length`). A rate limit (429) never
 * is one.
 */
export function isContextLengthError(err: unknown): boolean {
  if (!isModelCallError(err)) return false;
  if (err.code === 'context_length_exceeded') return true;
  if (err.status !== 400 && err.status !== 413) return false;
  return TOO_LONG.test(err.message);
}
