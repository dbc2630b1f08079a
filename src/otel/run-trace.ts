import {
  SpanKind,
  context as otelContext,
  trace,
  type Attributes,
  type Context,
  type Span,
  type Tracer,
} from '@opentelemetry/api';
import type { Subscription } from 'rxjs';
import { describeValue } from '../describe.js';
import type { RunObserver, TelemetryAttempt, TelemetryMcpRequest, TelemetryRun } from '../engine/telemetry.js';
import type { RunEvent, TerminalEvent, ToolCallFailed, ToolCallStarted } from '../events.js';
import type { Item, ToolCall } from '../items.js';
import { ChatSpan } from './chat-span.js';
import { answerContent, clip, inputContent } from './content.js';
import type { Instruments } from './instruments.js';
import { GuardrailSpans } from './guardrail-spans.js';
import { mcpSpan } from './mcp-span.js';
import { providerOf } from './options.js';
import * as C from './semconv.js';
import { endSpan, errorEnd, seconds, type SpanEnd } from './spans.js';

/** What every run of one `withTelemetry()` shares. */
export interface Shared {
  readonly tracer: Tracer;
  readonly instruments: Instruments;
  /** Content capture: the longest attribute, or undefined (off). */
  readonly maxChars: number | undefined;
  /** The tool calls whose `execute` is running now, innermost last: a sub-run opened inside one is its child. */
  readonly calls: { readonly runId: string; readonly callId: string; readonly context: Context }[];
}

/**
 * One run's spans (docs/telemetry.md): `invoke_agent {agent}` from its start to its terminal
 * event, a `chat {model}` span per model attempt and an `execute_tool {tool}` span per tool call
 * (children of the run's span), span events for retries, fallbacks and steering, and the run's
 * metrics. Spans start and end on the run's events (a `text_delta` is ignored: no OpenTelemetry
 * call per chunk); tools, model requests, hooks and MCP requests run with their span active.
 * At the terminal event every span still open ends (a cancel leaves them interrupted, not failed),
 * then the run's span: so each span ends exactly once, children first.
 */
export class RunTrace implements RunObserver {
  readonly #span: Span;
  readonly #context: Context;
  #chat: ChatSpan | undefined;
  readonly #tools = new Map<string, { readonly span: Span; readonly context: Context }>();
  /** Calls awaiting approval: their `tool_call_started` or `tool_call_failed` is the decision. */
  readonly #awaiting = new Set<string>();
  readonly #mcp = new Set<() => void>();
  readonly #withdrawn: Subscription;
  #cancelledAt: number | undefined;
  #ended = false;
  readonly #guards: GuardrailSpans;

  constructor(
    private readonly shared: Shared,
    private readonly info: TelemetryRun,
    parent: Context,
  ) {
    const run = info;
    const { provider, model } = providerOf(run.model);
    const attributes: Attributes = {
      [C.ATTR_GEN_AI_OPERATION_NAME]: C.GEN_AI_OPERATION_NAME_VALUE_INVOKE_AGENT,
      [C.ATTR_GEN_AI_AGENT_NAME]: run.agent,
      [C.ATTR_GEN_AI_PROVIDER_NAME]: provider,
      [C.ATTR_GEN_AI_REQUEST_MODEL]: model,
      [C.ATTR_LOOPCTL_RUN_ID]: run.runId,
    };
    const { maxChars } = shared;
    if (maxChars !== undefined) attributes[C.ATTR_GEN_AI_INPUT_MESSAGES] = clip(inputContent(run.input), maxChars);
    this.#span = shared.tracer.startSpan(`invoke_agent ${run.agent}`, { kind: SpanKind.INTERNAL, attributes }, parent);
    this.#context = trace.setSpan(parent, this.#span);
    this.#guards = new GuardrailSpans(shared.tracer, this.#context);
    this.#withdrawn = run.mailbox.withdrawn$.subscribe((token) => {
      this.#span.addEvent(C.EVENT_STEERING_WITHDRAWN, { [C.ATTR_LOOPCTL_STEERING_ID]: token.id });
    });
  }

  event(event: RunEvent, item?: Item): void {
    if (event.type === 'text_delta' || this.#ended) return; // the hot path: nothing per chunk
    const { instruments, maxChars } = this.shared;
    switch (event.type) {
      case 'model_request_started':
        // A rescue follows a stream that broke: that attempt ended with the error named here.
        if (this.#chat !== undefined) this.#endChat(event.error ? errorEnd(event.error) : { kind: 'interrupted' });
        this.#chat = new ChatSpan(this.shared.tracer, this.#context, event, maxChars);
        return;
      case 'model_response_completed': {
        const chat = this.#chat;
        this.#chat = undefined;
        chat?.completed(event, item, instruments);
        return;
      }
      case 'retry_scheduled':
        if (this.#chat !== undefined) this.#endChat(errorEnd(event.error));
        this.#span.addEvent(C.EVENT_RETRY, {
          [C.ATTR_LOOPCTL_ATTEMPT]: event.attempt,
          [C.ATTR_LOOPCTL_RETRY_DELAY_MS]: event.delayMs,
          [C.ATTR_ERROR_TYPE]: event.error.name,
          [C.ATTR_LOOPCTL_ERROR_MESSAGE]: event.error.message,
        });
        return;
      case 'fallback_activated':
        // The failed primary attempt ends at the fallback's request, which names its error.
        this.#span.addEvent(C.EVENT_FALLBACK, {
          [C.ATTR_LOOPCTL_FALLBACK_FROM]: event.from,
          [C.ATTR_LOOPCTL_FALLBACK_TO]: event.to,
          [C.ATTR_LOOPCTL_FALLBACK_REASON]: event.reason,
        });
        return;
      case 'compaction_completed': {
        // The summary call's chat span (a compaction's model request) ends with the summary.
        const chat = this.#chat;
        this.#chat = undefined;
        if (chat !== undefined && event.usage !== undefined) {
          const { runId, seq, turn, at, usage } = event;
          const done = { type: 'model_response_completed', runId, seq, turn, at, usage, finishReason: 'stop' } as const;
          chat.completed(done, undefined, instruments);
        } else if (chat !== undefined) this.#endChat(errorEnd(event.error ?? { name: 'CompactionError', message: '' }));
        this.#span.addEvent(C.EVENT_COMPACTION, {
          [C.ATTR_LOOPCTL_COMPACTION_STRATEGY]: event.strategy,
          [C.ATTR_LOOPCTL_COMPACTION_ITEMS]: event.items,
          [C.ATTR_LOOPCTL_COMPACTION_TOKENS_BEFORE]: event.tokensBefore,
          [C.ATTR_LOOPCTL_COMPACTION_TOKENS_AFTER]: event.tokensAfter,
        });
        return;
      }
      case 'tool_approval_requested':
        this.#awaiting.add(event.callId);
        this.#span.addEvent(C.EVENT_APPROVAL_REQUESTED, {
          [C.ATTR_GEN_AI_TOOL_CALL_ID]: event.callId,
          [C.ATTR_GEN_AI_TOOL_NAME]: event.name,
        });
        return;
      case 'tool_call_started':
        this.#decided(event);
        this.#startTool(event);
        return;
      case 'tool_call_completed': {
        const result =
          maxChars === undefined ? undefined : { [C.ATTR_GEN_AI_TOOL_CALL_RESULT]: clip(event.output, maxChars) };
        this.#endTool(event.callId, { kind: 'ok', ...(result ? { attributes: result } : {}) });
        return;
      }
      case 'tool_call_failed':
        this.#decided(event);
        // A call that never started (denied, invalid arguments, unknown tool) still gets its span.
        if (!this.#tools.has(event.callId)) this.#startTool(event);
        this.#endTool(event.callId, errorEnd(event.error));
        return;
      case 'user_message_injected': {
        const attributes: Attributes = { [C.ATTR_LOOPCTL_STEERING_ID]: event.id };
        if (maxChars !== undefined) attributes[C.ATTR_LOOPCTL_STEERING_CONTENT] = clip(event.content, maxChars);
        this.#span.addEvent(C.EVENT_STEERING_INJECTED, attributes);
        return;
      }
      case 'guardrail_started':
        this.#guards.started(event);
        return;
      case 'guardrail_passed':
      case 'guardrail_tripped':
        this.#guards.ended(event);
        return;
      case 'run_completed':
      case 'run_cancelled':
      case 'run_failed':
        this.#finish(event);
        return;
      default:
        return;
    }
  }

  ending(outcome: 'completed' | 'cancelled' | 'failed'): void {
    if (outcome === 'cancelled') this.#cancelledAt = performance.now();
  }

  run<T>(fn: () => T): T {
    return otelContext.with(this.#context, fn);
  }

  tool<T>(call: ToolCall, fn: () => T): T {
    const context = this.#tools.get(call.callId)?.context ?? this.#context;
    const { calls } = this.shared;
    calls.push({ runId: this.info.runId, callId: call.callId, context });
    try {
      return otelContext.with(context, fn);
    } finally {
      calls.pop();
    }
  }

  model<T>(attempt: TelemetryAttempt, fn: () => T): T {
    const chat = this.#chat;
    chat?.request(attempt.request);
    return otelContext.with(chat?.context ?? this.#context, fn);
  }

  hook<T>(_hook: string, fn: () => T): T {
    return otelContext.with(this.#context, fn);
  }

  mcp<T>(request: TelemetryMcpRequest, fn: () => Promise<T>): Promise<T> {
    const parent = this.#tools.get(request.callId)?.context ?? this.#context;
    return mcpSpan(this.shared.tracer, parent, request, fn, this.#mcp);
  }

  /** `loopctl.approval.decided` for a call that was awaiting approval: approved, or why it did not start. */
  #decided(event: ToolCallStarted | ToolCallFailed): void {
    if (!this.#awaiting.delete(event.callId)) return;
    const attributes: Attributes = {
      [C.ATTR_GEN_AI_TOOL_CALL_ID]: event.callId,
      [C.ATTR_LOOPCTL_APPROVAL_APPROVED]: event.type === 'tool_call_started',
    };
    attributes[C.ATTR_LOOPCTL_APPROVAL_OUTCOME] =
      event.type === 'tool_call_started' ? 'approved' : (event.outcome ?? 'refused');
    if (event.type === 'tool_call_failed') attributes[C.ATTR_ERROR_TYPE] = event.error.name;
    this.#span.addEvent(C.EVENT_APPROVAL_DECIDED, attributes);
  }

  #startTool(event: ToolCallStarted | ToolCallFailed): void {
    const attributes: Attributes = {
      [C.ATTR_GEN_AI_OPERATION_NAME]: C.GEN_AI_OPERATION_NAME_VALUE_EXECUTE_TOOL,
      [C.ATTR_GEN_AI_TOOL_NAME]: event.name,
      [C.ATTR_GEN_AI_TOOL_CALL_ID]: event.callId,
      [C.ATTR_GEN_AI_TOOL_TYPE]: 'function',
    };
    const { maxChars, tracer } = this.shared;
    if (maxChars !== undefined && event.type === 'tool_call_started') {
      attributes[C.ATTR_GEN_AI_TOOL_CALL_ARGUMENTS] = clip(event.arguments, maxChars);
    }
    const span = tracer.startSpan(`execute_tool ${event.name}`, { kind: SpanKind.INTERNAL, attributes }, this.#context);
    this.#tools.set(event.callId, { span, context: trace.setSpan(this.#context, span) });
  }

  #endTool(callId: string, end: SpanEnd): void {
    const tool = this.#tools.get(callId);
    if (tool === undefined) return;
    this.#tools.delete(callId);
    endSpan(tool.span, end);
  }

  #endChat(end: SpanEnd): void {
    const chat = this.#chat;
    this.#chat = undefined;
    chat?.end(end, this.shared.instruments);
  }

  /** The terminal event: what is still open ends (children first), then the run's span, once. */
  #finish(terminal: TerminalEvent): void {
    this.#ended = true;
    this.#withdrawn.unsubscribe();
    for (const interrupt of [...this.#mcp]) interrupt();
    for (const callId of [...this.#tools.keys()]) this.#endTool(callId, { kind: 'interrupted' });
    this.#guards.close();
    const failedModel = terminal.type === 'run_failed' && terminal.stopReason === 'model_error';
    if (this.#chat !== undefined) this.#endChat(failedModel ? errorEnd(terminal.error) : { kind: 'interrupted' });
    const { instruments, maxChars } = this.shared;
    const span = this.#span;
    const attributes: Attributes = {
      [C.ATTR_LOOPCTL_STOP_REASON]: terminal.stopReason,
      [C.ATTR_LOOPCTL_TURNS]: terminal.turn,
      [C.ATTR_LOOPCTL_USAGE_REPORTED]: terminal.usage.reported,
      [C.ATTR_GEN_AI_USAGE_INPUT_TOKENS]: terminal.usage.inputTokens,
      [C.ATTR_GEN_AI_USAGE_OUTPUT_TOKENS]: terminal.usage.outputTokens,
    };
    const agent = { [C.ATTR_GEN_AI_AGENT_NAME]: this.info.agent };
    instruments.runsEnded.add(1, { ...agent, [C.ATTR_LOOPCTL_STOP_REASON]: terminal.stopReason });
    if (terminal.type === 'run_completed') {
      if (maxChars !== undefined) {
        const answer = answerContent(terminal.output, terminal.finishReason);
        attributes[C.ATTR_GEN_AI_OUTPUT_MESSAGES] = clip(answer, maxChars);
      }
      return endSpan(span, { kind: 'ok', attributes });
    }
    if (terminal.type === 'run_failed') return endSpan(span, errorEnd(terminal.error, attributes));
    // "Cancelled is not failed": no error status; where and why it stopped, described totally.
    attributes[C.ATTR_LOOPCTL_CANCEL_PHASE] = terminal.phase;
    attributes[C.ATTR_LOOPCTL_CANCEL_REASON] = describeValue(terminal.reason, 'reason');
    const at = this.#cancelledAt ?? performance.now();
    instruments.cancelDuration.record(seconds(at, performance.now()), {
      ...agent,
      [C.ATTR_LOOPCTL_CANCEL_PHASE]: terminal.phase,
    });
    endSpan(span, { kind: 'ok', attributes });
  }
}
