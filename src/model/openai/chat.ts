import type OpenAI from 'openai';
import type { ModelProvider, ModelRequest } from '../types.js';
import { toChatMessages, toChatTools } from './chat-messages.js';
import {
  CHAT_COMPLETION_BODY,
  ChatStreamAccumulator,
  chatCompletionToResponse,
  type ChatChunk,
} from './chat-stream.js';
import { clientFactory, requestTimeout, singleCall, streamCall, type OpenAIProviderOptions } from './provider.js';
import { checkStructuredOutputs, structuredOutputs } from './structured.js';

/** Options of {@link openaiChat} (see {@link OpenAIProviderOptions}). */
export type OpenAIChatOptions = OpenAIProviderOptions;

type StreamingParams = OpenAI.Chat.Completions.ChatCompletionCreateParamsStreaming;
type NonStreamingParams = OpenAI.Chat.Completions.ChatCompletionCreateParamsNonStreaming;

/**
 * A {@link ModelProvider} speaking Chat Completions (`POST {baseURL}/chat/completions`):
 * OpenAI and every OpenAI-compatible server (vLLM, Groq, DeepSeek, OpenRouter, Ollama…).
 *
 * `id` is `openai:<model>`; `stream` (default true) is the provider's default.
 * `call(request)` is cold: subscribing sends `{ ...options.request, model,
 * messages, tools? }` plus, when `request.stream`, `stream: true` and
 * `stream_options: { include_usage: true }` (else `stream: false`), with
 * `maxRetries: 0`, a per-request timeout and its own AbortController
 * (docs/recovery.md, "Known behaviour of dependencies"). A request with `output` (a structured answer)
 * adds `response_format: { type: 'json_schema', json_schema: { name, schema, strict } }`, or the
 * schema in the system message, as `options.structuredOutputs` says (`StructuredOutputsMode`). It emits deltas
 * (streaming only), one `response`, then completes; unsubscribing aborts the
 * request (the socket closes). Errors are `ModelCallError`s classified by
 * `toModelCallError`.
 *
 * @throws ConfigurationError at construction (`model`, `timeoutMs`, `structuredOutputs`, `apiKey`:
 *   without `client`, a key must come from `apiKey` or `OPENAI_API_KEY`).
 * @example
 * const model = openaiChat({ model: 'gpt-4o-mini', request: { temperature: 0 } });
 */
export function openaiChat(options: OpenAIChatOptions): ModelProvider {
  const client = clientFactory(options);
  const mode = checkStructuredOutputs(options.structuredOutputs);
  const body = (request: ModelRequest) => ({
    ...options.request,
    ...request.providerOptions?.['openai'],
    model: options.model,
    messages: toChatMessages(request.instructions, request.items),
    ...(request.tools.length > 0 ? { tools: toChatTools(request.tools) } : {}),
    ...(request.output !== undefined ? { response_format: { type: 'json_schema', json_schema: request.output } } : {}),
  });
  const call = structuredOutputs(mode, (request: ModelRequest) => {
    const timeout = requestTimeout(options, request);
    if (request.stream) {
      return streamCall<ChatChunk>(
        timeout,
        (sdk) =>
          client().chat.completions.create(
            { ...body(request), stream: true, stream_options: { include_usage: true } } as StreamingParams,
            sdk,
          ),
        ChatStreamAccumulator,
        CHAT_COMPLETION_BODY,
      );
    }
    return singleCall(
      timeout,
      (sdk) => client().chat.completions.create({ ...body(request), stream: false } as NonStreamingParams, sdk),
      chatCompletionToResponse,
    );
  });
  return { id: `openai:${options.model}`, stream: options.stream ?? true, call };
}
