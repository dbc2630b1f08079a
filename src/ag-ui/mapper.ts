import { EventType, type AGUIEvent, type TokenUsage } from '@ag-ui/core';
import { describeValue, toJsonText } from '../describe.js';
import type { RunEvent, TerminalEvent } from '../events.js';
import type { Usage } from '../items.js';
import { LOOPCTL_EVENTS, assistantMessageId, toolResultMessageId } from './names.js';

/** Why an answer starts over (`loopctl.answer_restarted.cause`). */
export type RestartCause = 'retry' | 'rescue' | 'fallback';

/**
 * Maps one run's `RunEvent`s, in order, to AG-UI events (docs/ui.md, "Event mapping"). A state machine:
 * the open text message, the open step, the message id of the current model attempt, the tool calls that
 * got a `TOOL_CALL_START`. Ids are derived from the run's events only (never random), so mapping the same
 * events again gives the same AG-UI events: a resumed stream continues the first one exactly.
 * Sub-run events are not mapped (an agent used as a tool shows as that one tool call).
 */
export class AgUiMapper {
  #messageId: string | undefined;
  #textOpen = false;
  /** The message the current model call streamed text into (an attempt > 1 starts a new one). */
  #streamed: string | undefined;
  #cause: RestartCause | undefined;
  #step: string | undefined;
  readonly #started = new Set<string>();

  constructor(readonly threadId: string) {}

  /** The AG-UI events for `event` (none for events the mapping leaves out). */
  map(event: RunEvent): AGUIEvent[] {
    const out: AGUIEvent[] = [];
    const base = Number.isSafeInteger(event.at) ? { timestamp: event.at } : {};
    const custom = (name: string, value: unknown) => out.push({ type: EventType.CUSTOM, ...base, name, value });
    switch (event.type) {
      case 'run_started':
        out.push({ type: EventType.RUN_STARTED, ...base, threadId: this.threadId, runId: event.runId });
        break;
      case 'turn_started':
        this.#closeStep(out, base);
        this.#step = `turn ${event.turn}`;
        out.push({ type: EventType.STEP_STARTED, ...base, stepName: this.#step });
        break;
      case 'user_message_injected':
        custom(LOOPCTL_EVENTS.steeringInjected, { id: event.id, content: event.content });
        break;
      case 'model_request_started':
        this.#closeText(out, base);
        if (event.attempt > 1 && this.#streamed !== undefined) {
          custom(LOOPCTL_EVENTS.answerRestarted, { previousMessageId: this.#streamed, cause: this.#cause ?? 'rescue' });
        }
        this.#streamed = this.#cause = undefined;
        this.#messageId = assistantMessageId(event.runId, event.seq);
        break;
      case 'text_delta': {
        if (event.delta === '') break;
        const messageId = (this.#messageId ??= assistantMessageId(event.runId, event.seq));
        if (!this.#textOpen) {
          out.push({ type: EventType.TEXT_MESSAGE_START, ...base, messageId, role: 'assistant' });
          this.#textOpen = true;
          this.#streamed = messageId;
        }
        out.push({ type: EventType.TEXT_MESSAGE_CONTENT, ...base, messageId, delta: event.delta });
        break;
      }
      case 'output_delta': {
        const messageId = (this.#messageId ??= assistantMessageId(event.runId, event.seq));
        custom(LOOPCTL_EVENTS.outputDelta, { messageId, value: jsonValue(event.value) });
        break;
      }
      case 'model_response_completed':
        this.#closeText(out, base);
        this.#streamed = undefined;
        break;
      case 'tool_call_started':
        this.#startCall(out, base, event.runId, event.callId, event.name, event.arguments);
        break;
      case 'tool_call_progress':
        custom(LOOPCTL_EVENTS.toolProgress, {
          callId: event.callId,
          name: event.name,
          progress: jsonValue(event.progress),
        });
        break;
      case 'tool_call_completed':
        this.#started.delete(event.callId);
        out.push({
          type: EventType.TOOL_CALL_RESULT,
          ...base,
          messageId: toolResultMessageId(event.runId, event.callId),
          toolCallId: event.callId,
          content: event.output,
          role: 'tool',
        });
        break;
      case 'tool_call_failed':
        // A call denied or refused before it started gets its START here, so the result has a call to answer.
        if (!this.#started.has(event.callId)) this.#startCall(out, base, event.runId, event.callId, event.name, '');
        this.#started.delete(event.callId);
        out.push({
          type: EventType.TOOL_CALL_RESULT,
          ...base,
          messageId: toolResultMessageId(event.runId, event.callId),
          toolCallId: event.callId,
          content: describeValue(event.error.message),
          role: 'tool',
          metadata: {
            loopctl: {
              error: jsonValue(event.error),
              interrupted: event.interrupted,
              ...(event.outcome === undefined ? {} : { outcome: event.outcome }),
            },
          },
        });
        break;
      case 'retry_scheduled':
        this.#cause = 'retry';
        custom(LOOPCTL_EVENTS.retryScheduled, {
          attempt: event.attempt,
          delayMs: event.delayMs,
          error: jsonValue(event.error),
        });
        break;
      case 'fallback_activated':
        this.#cause = 'fallback';
        custom(LOOPCTL_EVENTS.fallbackActivated, { from: event.from, to: event.to, reason: event.reason });
        break;
      case 'turn_completed':
        this.#closeText(out, base);
        this.#closeStep(out, base);
        break;
      case 'tool_approval_requested':
        custom(LOOPCTL_EVENTS.approvalRequested, {
          callId: event.callId,
          name: event.name,
          arguments: event.arguments,
        });
        break;
      case 'stop_requested':
        // The payload reserved for it: `{ at, graceMs? }` (`at` is the boundary, as `stop()` takes it).
        custom(
          LOOPCTL_EVENTS.stopRequested,
          event.graceMs === undefined ? { at: event.stopAt } : { at: event.stopAt, graceMs: event.graceMs },
        );
        break;
      case 'compaction_started':
        this.#closeText(out, base);
        custom(LOOPCTL_EVENTS.compactionStarted, {
          cause: event.cause,
          strategy: event.strategy,
          tokensBefore: event.tokensBefore,
          ...(event.contextWindow !== undefined ? { contextWindow: event.contextWindow } : {}),
          items: event.items,
        });
        break;
      case 'compaction_completed':
        custom(LOOPCTL_EVENTS.compactionCompleted, {
          strategy: event.strategy,
          summaryId: event.summaryId,
          items: event.items,
          tokensBefore: event.tokensBefore,
          tokensAfter: event.tokensAfter,
          ...(event.usage !== undefined ? { usage: summaryUsage(event.usage) } : {}),
          ...(event.error !== undefined ? { error: jsonValue(event.error) } : {}),
        });
        break;
      case 'subrun_event':
        break;
      default:
        this.#terminal(event, out, base);
    }
    return out;
  }

  #terminal(event: TerminalEvent, out: AGUIEvent[], base: { timestamp?: number }): void {
    this.#closeText(out, base);
    this.#closeStep(out, base);
    const run = { threadId: this.threadId, runId: event.runId };
    const usage = tokenUsage(event.usage);
    if (event.type === 'run_completed' && event.suspended !== undefined) {
      // Suspended for approval: AG-UI's interrupt outcome, the suspension as its payload.
      const value = { suspended: event.suspended };
      out.push({ type: EventType.CUSTOM, ...base, name: LOOPCTL_EVENTS.suspended, value });
      const interrupts = event.suspended.pending.map((c) => ({
        id: c.callId,
        reason: 'tool_approval',
        toolCallId: c.callId,
        metadata: { name: c.name, arguments: c.arguments },
      }));
      out.push({ type: EventType.RUN_FINISHED, ...base, ...run, outcome: { type: 'interrupt', interrupts }, ...usage });
    } else if (event.type === 'run_completed') {
      const result = {
        output: event.output,
        ...('value' in event ? { value: jsonValue(event.value) } : {}),
        finishReason: event.finishReason,
        undelivered: event.undelivered,
        // a graceful stop reached its boundary; a limit of the run's budget was reached (with its figures)
        ...(event.stopReason === 'stopped' ? { stopReason: 'stopped' } : {}),
        ...(event.stopReason === 'budget' ? { stopReason: 'budget', budget: event.budget } : {}),
        ...(event.cost !== undefined ? { cost: event.cost } : {}),
      };
      out.push({ type: EventType.RUN_FINISHED, ...base, ...run, result, outcome: { type: 'success' }, ...usage });
    } else if (event.type === 'run_cancelled') {
      // "cancelled is not failed" (guarantee 4): AG-UI's own cancelled outcome, not RUN_ERROR.
      const value = {
        phase: event.phase,
        reason: describeValue(event.reason, 'reason'),
        undelivered: event.undelivered,
      };
      out.push({ type: EventType.CUSTOM, ...base, name: LOOPCTL_EVENTS.cancelled, value });
      out.push({ type: EventType.RUN_FINISHED, ...base, ...run, outcome: { type: 'cancelled' }, ...usage });
    } else {
      out.push({
        type: EventType.RUN_ERROR,
        ...base,
        message: describeValue(event.error.message),
        code: event.stopReason,
        ...usage,
      });
    }
  }

  #startCall(
    out: AGUIEvent[],
    base: { timestamp?: number },
    runId: string,
    callId: string,
    name: string,
    args: string,
  ) {
    this.#closeText(out, base);
    this.#started.add(callId);
    const parentMessageId = (this.#messageId ??= assistantMessageId(runId, 0));
    out.push({ type: EventType.TOOL_CALL_START, ...base, toolCallId: callId, toolCallName: name, parentMessageId });
    if (args !== '') out.push({ type: EventType.TOOL_CALL_ARGS, ...base, toolCallId: callId, delta: args });
    out.push({ type: EventType.TOOL_CALL_END, ...base, toolCallId: callId });
  }

  #closeText(out: AGUIEvent[], base: { timestamp?: number }): void {
    if (!this.#textOpen) return;
    this.#textOpen = false;
    out.push({ type: EventType.TEXT_MESSAGE_END, ...base, messageId: this.#messageId! });
  }

  #closeStep(out: AGUIEvent[], base: { timestamp?: number }): void {
    if (this.#step === undefined) return;
    out.push({ type: EventType.STEP_FINISHED, ...base, stepName: this.#step });
    this.#step = undefined;
  }
}

/** A foreign value as plain JSON data (the encoder stringifies it): its JSON text parsed back, else its description. */
function jsonValue(value: unknown): unknown {
  if (value === undefined) return null;
  const json = toJsonText(value);
  return json.ok ? JSON.parse(json.text) : describeValue(value);
}

/** The run's usage as AG-UI's per-model list (one entry: loopctl sums every model of the run). */
/** A summary call's usage in AG-UI's token names. */
function summaryUsage({ inputTokens, outputTokens, totalTokens }: Usage): TokenUsage {
  return { inputTokens, outputTokens, totalTokens };
}

function tokenUsage(usage: Usage): { usage?: TokenUsage[] } {
  const { inputTokens, outputTokens, totalTokens } = usage;
  if (![inputTokens, outputTokens, totalTokens].every(Number.isSafeInteger)) return {};
  return { usage: [{ inputTokens, outputTokens, totalTokens }] };
}
