import type OpenAI from 'openai';
import type { ModelProvider, ModelRequest } from '../types.js';
import {
  RESPONSE_BODY,
  responseToModelResponse,
  toResponsesInput,
  toResponsesTools,
  type ResponsesResponse,
} from './responses-items.js';
import { ResponsesStreamAccumulator, type ResponsesStreamEvent } from './responses-stream.js';
import { clientFactory, requestTimeout, singleCall, streamCall, type OpenAIProviderOptions } from './provider.js';
import { checkStructuredOutputs, structuredOutputs } from './structured.js';

/** Options of {@link openaiResponses} (see {@link OpenAIProviderOptions}). */
export type OpenAIResponsesOptions = OpenAIProviderOptions;

type StreamingParams = OpenAI.Responses.ResponseCreateParamsStreaming;
type NonStreamingParams = OpenAI.Responses.ResponseCreateParamsNonStreaming;

/**
 * A {@link ModelProvider} speaking the Responses API (`POST {baseURL}/responses`).
 *
 * `id` is `openai-responses:<model>`; `stream` (default true) is the provider's
 * default. `call(request)` is cold: subscribing sends `{ ...options.request,
 * model, instructions?, input, tools? }` (plus `stream: true` when
 * `request.stream`) with `maxRetries: 0`, a per-request timeout and its own
 * AbortController (docs/recovery.md). A request with `output` (a structured answer) adds
 * `text.format: { type: 'json_schema', name, schema, strict }` (beside any `text` field of
 * `options.request`), or the schema in `instructions`, as `options.structuredOutputs` says
 * (`StructuredOutputsMode`). It emits deltas (streaming only), one
 * `response`, then completes; unsubscribing aborts the request (the socket
 * closes). Stream `error` / `response.failed` events and HTTP errors are
 * `ModelCallError`s classified by `toModelCallError`.
 *
 * @throws ConfigurationError at construction (`model`, `timeoutMs`, `structuredOutputs`, `apiKey`).
 * @example
 * const model = openaiResponses({ model: 'gpt-4.1-mini' });
 */
export function openaiResponses(options: OpenAIResponsesOptions): ModelProvider {
  const client = clientFactory(options);
  const mode = checkStructuredOutputs(options.structuredOutputs);
  const text = (request: ModelRequest) => {
    if (request.output === undefined) return {};
    const given = options.request?.['text'];
    const format = { type: 'json_schema', ...request.output };
    return { text: { ...(typeof given === 'object' && given !== null ? given : {}), format } };
  };
  const body = (request: ModelRequest) => ({
    ...options.request,
    ...request.providerOptions?.['openai'],
    model: options.model,
    ...(request.instructions ? { instructions: request.instructions } : {}),
    input: toResponsesInput(request.items),
    ...(request.tools.length > 0 ? { tools: toResponsesTools(request.tools) } : {}),
    ...text(request),
  });
  const call = structuredOutputs(mode, (request: ModelRequest) => {
    const timeout = requestTimeout(options, request);
    if (request.stream) {
      return streamCall<ResponsesStreamEvent>(
        timeout,
        (sdk) => client().responses.create({ ...body(request), stream: true } as StreamingParams, sdk),
        ResponsesStreamAccumulator,
        RESPONSE_BODY,
      );
    }
    return singleCall(
      timeout,
      // The raw body, read as JSON: the SDK's own post-processing (output_text) assumes a well-formed
      // response and would throw a TypeError on a malformed one, before our checks could name the field.
      (sdk) =>
        client()
          .responses.create({ ...body(request), stream: false } as NonStreamingParams, sdk)
          .asResponse()
          .then((response) => response.json() as Promise<ResponsesResponse>),
      (response) => responseToModelResponse(response),
    );
  });
  return { id: `openai-responses:${options.model}`, stream: options.stream ?? true, call };
}
