import { SpanKind, trace, type Attributes, type Context, type Span } from '@opentelemetry/api';
import type { ModelRequestStarted, ModelResponseCompleted } from '../events.js';
import type { Item } from '../items.js';
import type { ModelRequest } from '../model/types.js';
import { clip, outputContent, requestContent } from './content.js';
import type { Instruments } from './instruments.js';
import { providerOf } from './options.js';
import {
  ATTR_ERROR_TYPE,
  ATTR_GEN_AI_INPUT_MESSAGES,
  ATTR_GEN_AI_OPERATION_NAME,
  ATTR_GEN_AI_OUTPUT_MESSAGES,
  ATTR_GEN_AI_PROVIDER_NAME,
  ATTR_GEN_AI_REQUEST_MODEL,
  ATTR_GEN_AI_REQUEST_STREAM,
  ATTR_GEN_AI_RESPONSE_FINISH_REASONS,
  ATTR_GEN_AI_SYSTEM_INSTRUCTIONS,
  ATTR_GEN_AI_TOKEN_TYPE,
  ATTR_GEN_AI_USAGE_INPUT_TOKENS,
  ATTR_GEN_AI_USAGE_OUTPUT_TOKENS,
  ATTR_LOOPCTL_ATTEMPT,
  ATTR_LOOPCTL_ATTEMPT_CAUSE,
  GEN_AI_OPERATION_NAME_VALUE_CHAT,
  GEN_AI_TOKEN_TYPE_VALUE_INPUT,
  GEN_AI_TOKEN_TYPE_VALUE_OUTPUT,
} from './semconv.js';
import { endSpan, seconds, type SpanEnd } from './spans.js';
import type { Tracer } from '@opentelemetry/api';

/**
 * One model attempt's `chat {model}` span (first, retry, rescue or fallback: each its own), a child
 * of the run's span, and its GenAI client metrics: the operation duration when it completed or
 * failed (not when a cancel cut it short), the token usage when the server reported it.
 */
export class ChatSpan {
  readonly span: Span;
  readonly context: Context;
  readonly #started = performance.now();
  readonly #metric: Attributes;

  constructor(
    tracer: Tracer,
    parent: Context,
    event: ModelRequestStarted,
    private readonly maxChars?: number,
  ) {
    const { provider, model } = providerOf(event.model);
    this.#metric = {
      [ATTR_GEN_AI_OPERATION_NAME]: GEN_AI_OPERATION_NAME_VALUE_CHAT,
      [ATTR_GEN_AI_PROVIDER_NAME]: provider,
      [ATTR_GEN_AI_REQUEST_MODEL]: model,
    };
    const attributes: Attributes = {
      ...this.#metric,
      [ATTR_GEN_AI_REQUEST_STREAM]: event.stream,
      [ATTR_LOOPCTL_ATTEMPT]: event.attempt,
      [ATTR_LOOPCTL_ATTEMPT_CAUSE]: event.cause ?? 'first',
    };
    this.span = tracer.startSpan(`chat ${model}`, { kind: SpanKind.CLIENT, attributes }, parent);
    this.context = trace.setSpan(parent, this.span);
  }

  /** The request as sent (content capture only: instructions and messages). */
  request(request: ModelRequest): void {
    if (this.maxChars === undefined || !this.span.isRecording()) return;
    const { input, instructions } = requestContent(request);
    this.span.setAttribute(ATTR_GEN_AI_SYSTEM_INSTRUCTIONS, clip(instructions, this.maxChars));
    this.span.setAttribute(ATTR_GEN_AI_INPUT_MESSAGES, clip(input, this.maxChars));
  }

  /** The response is in: finish reason, usage, the output (content capture), metrics. */
  completed(event: ModelResponseCompleted, item: Item | undefined, instruments: Instruments): void {
    const { usage, finishReason } = event;
    const attributes: Attributes = { [ATTR_GEN_AI_RESPONSE_FINISH_REASONS]: [finishReason] };
    if (usage.reported) {
      attributes[ATTR_GEN_AI_USAGE_INPUT_TOKENS] = usage.inputTokens;
      attributes[ATTR_GEN_AI_USAGE_OUTPUT_TOKENS] = usage.outputTokens;
      const input = { ...this.#metric, [ATTR_GEN_AI_TOKEN_TYPE]: GEN_AI_TOKEN_TYPE_VALUE_INPUT };
      instruments.tokenUsage.record(usage.inputTokens, input);
      const output = { ...this.#metric, [ATTR_GEN_AI_TOKEN_TYPE]: GEN_AI_TOKEN_TYPE_VALUE_OUTPUT };
      instruments.tokenUsage.record(usage.outputTokens, output);
    }
    if (this.maxChars !== undefined && item !== undefined) {
      attributes[ATTR_GEN_AI_OUTPUT_MESSAGES] = clip(outputContent(item, finishReason), this.maxChars);
    }
    this.end({ kind: 'ok', attributes }, instruments);
  }

  /** Ends the span; a completed or failed attempt records its duration. */
  end(end: SpanEnd, instruments: Instruments): void {
    if (end.kind !== 'interrupted') {
      const attributes = end.kind === 'error' ? { ...this.#metric, [ATTR_ERROR_TYPE]: end.type } : this.#metric;
      instruments.operationDuration.record(seconds(this.#started, performance.now()), attributes);
    }
    endSpan(this.span, end);
  }
}
