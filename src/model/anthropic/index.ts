/**
 * The Anthropic Messages adapter (a `ModelProvider`): `anthropicMessages`, plus the pure conversions and the error
 * classification it uses. Needs the optional peer dependency `@anthropic-ai/sdk`.
 */
export { anthropicMessages } from './provider.js';
export {
  DEFAULT_MAX_TOKENS,
  DEFAULT_TIMEOUT_MS,
  SDK_TIMEOUT_MARGIN_MS,
  type AnthropicCaching,
  type AnthropicOptions,
  type AnthropicThinking,
} from './options.js';
export { toAnthropicMessages, toAnthropicTools, type CacheMarks } from './history.js';
export { AnthropicStreamAccumulator } from './stream.js';
export {
  assembleResponse,
  mapAnthropicUsage,
  mapStopReason,
  messageToResponse,
  REFUSAL_WITHOUT_TEXT,
} from './response.js';
export { toAnthropicCallError } from './errors.js';
export { ANTHROPIC_FAMILY, wireBlockFault, type AnthropicParts, type WireBlock } from './wire.js';
