import type Anthropic from '@anthropic-ai/sdk';
import { ConfigurationError } from '../../errors.js';
import type { ModelProvider, ModelRequest } from '../types.js';
import { outputInstructions } from '../openai/structured.js';
import { singleMessage, streamMessages } from './call.js';
import { toAnthropicMessages, toAnthropicTools } from './history.js';
import { checkOptions, requestTimeout, type AnthropicOptions } from './options.js';

type StreamingParams = Anthropic.Messages.MessageCreateParamsStreaming;
type NonStreamingParams = Anthropic.Messages.MessageCreateParamsNonStreaming;

/**
 * A {@link ModelProvider} speaking Anthropic's Messages API (`POST {baseURL}/v1/messages`) with `@anthropic-ai/sdk`.
 *
 * `id` is `anthropic:<model>`; `stream` (default true) is the provider's default. `call(request)` is cold:
 * subscribing sends `{ ...options.request, ...request.providerOptions.anthropic, model, max_tokens, system?, messages,
 * tools?, thinking?, output_config? }` plus `stream: true|false` (neither `request` nor `providerOptions.anthropic`
 * can set `model`, `max_tokens`, `system`, `messages`, `tools`, `thinking` or `stream`; other families' options are
 * ignored), with `maxRetries: 0`, a per-request timeout (`request.timeoutMs` + 1 000 ms, so the
 * engine's deadline fires first) and its own AbortController. `max_tokens` defaults to 4 096 (`maxTokens`). A request
 * with `output` (a structured answer) adds `output_config: { format: { type: 'json_schema', schema } }`, or, with
 * `structuredOutputs: 'instructions'`, the schema in the system prompt. History conversion:
 * {@link toAnthropicMessages} (thinking blocks replayed unchanged from `providerParts`; another family's parts
 * ignored); `cache` adds `cache_control` markers. It emits deltas (streaming only), one `response`, then completes;
 * unsubscribing aborts the request (the socket closes). Errors: `toAnthropicCallError` (429 and 529 retryable with
 * `retry-after`, other 4xx not, an in-stream `overloaded_error` retryable, a cut stream retryable so the engine's
 * rescue sends it again without streaming).
 *
 * @throws ConfigurationError at construction naming the option out of shape (`model`, `apiKey`, `baseURL`, `stream`,
 *   `request`, `client`, `maxTokens`, `timeoutMs`, `thinking`, `cache`, `structuredOutputs`; see `checkOptions`), or
 *   `apiKey` when there is no key: without `client`, it must come from `apiKey` or `ANTHROPIC_API_KEY`.
 * @example
 * const model = anthropicMessages({ model: 'claude-sonnet-4-5', thinking: { type: 'enabled', budget_tokens: 2048 } });
 */
export function anthropicMessages(options: AnthropicOptions): ModelProvider {
  const checked = checkOptions(options);
  const byInstructions = checkMode(options.structuredOutputs) === 'instructions';
  // What loopctl sets is never taken from `request` or `providerOptions`, even when loopctl leaves it out of a body.
  const extras = withoutOwnFields(options.request);
  const body = (request: ModelRequest) => {
    const output = request.output;
    const instructions =
      output !== undefined && byInstructions ? outputInstructions(request.instructions, output) : request.instructions;
    const { system, messages } = toAnthropicMessages(instructions, request.items, checked.cache);
    return {
      ...extras,
      ...withoutOwnFields(request.providerOptions?.['anthropic']),
      model: checked.model,
      max_tokens: checked.maxTokens,
      ...(system ? { system } : {}),
      messages,
      ...(request.tools.length > 0 ? { tools: toAnthropicTools(request.tools, checked.cache) } : {}),
      ...(checked.thinking !== undefined ? { thinking: checked.thinking } : {}),
      ...(output !== undefined && !byInstructions
        ? { output_config: { format: { type: 'json_schema', schema: output.schema } } }
        : {}),
    };
  };
  const call = (request: ModelRequest) => {
    const timeout = requestTimeout(options, request);
    if (request.stream) {
      return streamMessages(timeout, (sdk) =>
        checked.client().messages.create({ ...body(request), stream: true } as StreamingParams, sdk),
      );
    }
    return singleMessage(timeout, (sdk) =>
      checked.client().messages.create({ ...body(request), stream: false } as NonStreamingParams, sdk),
    );
  };
  return { id: `anthropic:${checked.model}`, stream: options.stream ?? true, call };
}

const OWN_FIELDS = new Set(['model', 'max_tokens', 'system', 'messages', 'tools', 'thinking', 'stream']);

/** The wire fields of `fields` that loopctl does not own ({@link OWN_FIELDS}); `{}` for undefined. */
function withoutOwnFields(fields: Readonly<Record<string, unknown>> | undefined): Record<string, unknown> {
  return Object.fromEntries(Object.entries(fields ?? {}).filter(([key]) => !OWN_FIELDS.has(key)));
}

function checkMode(value: unknown): 'native' | 'instructions' {
  if (value === undefined || value === 'native' || value === 'instructions') return value ?? 'native';
  throw new ConfigurationError('structuredOutputs', `must be 'native' or 'instructions' (got ${String(value)})`);
}
