/**
 * The OpenAI wire adapters (each a `ModelProvider`): `openaiChat` for
 * Chat Completions, `openaiResponses` for the Responses API, plus the pure
 * conversions and the error classification they use.
 */
export { openaiChat, type OpenAIChatOptions } from './chat.js';
export { openaiResponses, type OpenAIResponsesOptions } from './responses.js';
export {
  checkStructuredOutputs,
  outputInstructions,
  refusesStructuredOutputs,
  type StructuredOutputsMode,
} from './structured.js';
export { DEFAULT_TIMEOUT_MS, SDK_TIMEOUT_MARGIN_MS, type OpenAIProviderOptions } from './provider.js';
export { toChatMessages, toChatTools, type ChatMessage, type ChatTool } from './chat-messages.js';
export { ChatStreamAccumulator, chatCompletionToResponse, mapChatFinishReason, mapChatUsage } from './chat-stream.js';
export { toResponsesInput, toResponsesTools, responseToModelResponse, mapResponsesUsage } from './responses-items.js';
export { ResponsesStreamAccumulator } from './responses-stream.js';
export { toModelCallError, retryAfterMs, SERVER_ERROR_CODES } from './errors.js';
