import { EventType, type AGUIEvent, type TokenUsage } from '@ag-ui/core';
import { describeValue } from '../describe.js';
import { interruptedResult } from '../engine/scratchpad.js';
import type { RunEvent, SubrunEvent, TerminalEvent } from '../events.js';
import type { Item, Usage } from '../items.js';
import { LOOPCTL_EVENTS, assistantMessageId, toolResultMessageId } from './names.js';
import { OpenCalls, type OpenCall } from './open-calls.js';
import { jsonValue, runEnd } from './run-end.js';

/** Why an answer starts over (`loopctl.answer_restarted.cause`). */
export type RestartCause = 'retry' | 'rescue' | 'fallback';

/**
 * Maps one run's `RunEvent`s, in order, to AG-UI events (docs/ui.md, "Event mapping"). A state machine:
 * the open text message, the open step, the message id of the current model attempt, the tool calls that
 * got a `TOOL_CALL_START`. Ids are derived from the run's events only (never random), so mapping the same
 * events again gives the same AG-UI events: a resumed stream continues the first one exactly.
 * Sub-run events are not mapped (an agent used as a tool shows as that one tool call), except a sub-agent's
 * call that asks for approval (any depth): the root's driver must answer it, so it is surfaced at the root
 * with its `path`, and its start and result follow. A terminal settles every call still open.
 */
export class AgUiMapper {
  #messageId: string | undefined;
  #textOpen = false;
  /** The message the current model call streamed text into (an attempt > 1 starts a new one). */
  #streamed: string | undefined;
  /** The last message text was streamed into: the one a retracting guardrail takes back. */
  #lastText: string | undefined;
  #cause: RestartCause | undefined;
  #step: string | undefined;
  /** The root run's id (from its events), for the message a sub-agent's surfaced call hangs under. */
  #runId = '';
  readonly #open = new OpenCalls();

  constructor(readonly threadId: string) {}

  /** The AG-UI events for `event` (none for events the mapping leaves out). */
  map(event: RunEvent): AGUIEvent[] {
    const out: AGUIEvent[] = [];
    const base = Number.isSafeInteger(event.at) ? { timestamp: event.at } : {};
    const custom = (name: string, value: unknown) => out.push({ type: EventType.CUSTOM, ...base, name, value });
    this.#runId = event.runId;
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
          this.#streamed = this.#lastText = messageId;
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
        this.#startCall(out, base, this.#open.open(callOf(event), true));
        break;
      case 'tool_call_progress':
        custom(LOOPCTL_EVENTS.toolProgress, {
          callId: event.callId,
          name: event.name,
          progress: jsonValue(event.progress),
        });
        break;
      case 'tool_call_completed':
      case 'tool_call_failed':
        this.#result(out, base, this.#open.open(callOf(event), false), event);
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
        this.#open.open(callOf(event), false);
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
      case 'guardrail_started':
      case 'guardrail_passed': {
        const { name, kind, callId } = event;
        const mode = event.type === 'guardrail_started' ? { mode: event.mode } : {};
        const started = event.type === 'guardrail_started';
        const value = { name, kind, ...mode, ...(callId !== undefined ? { callId } : {}) };
        custom(started ? LOOPCTL_EVENTS.guardrailStarted : LOOPCTL_EVENTS.guardrailPassed, value);
        break;
      }
      case 'guardrail_tripped': {
        // A retracted answer: its message closes, and the payload names it so a client drops it (docs/ui.md).
        if (event.retracted) this.#closeText(out, base);
        const { name, kind, action, callId } = event;
        custom(LOOPCTL_EVENTS.guardrailTripped, {
          name,
          kind,
          action,
          output: jsonValue(event.output),
          ...(callId !== undefined ? { callId } : {}),
          ...(event.error !== undefined ? { error: jsonValue(event.error) } : {}),
          ...(event.retracted && this.#lastText !== undefined ? { retracted: true, messageId: this.#lastText } : {}),
        });
        break;
      }
      case 'subrun_event':
        this.#nested(event, out, base);
        break;
      case 'run_resumed':
        custom(LOOPCTL_EVENTS.runResumed, { fromTurn: event.fromTurn });
        break;
      default:
        this.#terminal(event, out, base);
    }
    return out;
  }

  /**
   * A sub-run's event: only what concerns a call the root's driver must answer. Its approval request opens
   * it (`loopctl.approval_requested` with `path`); its start, progress and result follow as the root's own
   * would (`metadata.loopctl.path` says whose it is); the sub-run's end settles what it left open.
   */
  #nested(sub: SubrunEvent, out: AGUIEvent[], base: { timestamp?: number }): void {
    const { event, path } = sub;
    const custom = (name: string, value: unknown) => out.push({ type: EventType.CUSTOM, ...base, name, value });
    switch (event.type) {
      case 'tool_approval_requested': {
        this.#open.open({ ...callOf(event), path }, false);
        const { callId, name, arguments: args } = event;
        custom(LOOPCTL_EVENTS.approvalRequested, { callId, name, arguments: args, path });
        return;
      }
      case 'tool_call_started': {
        const call = this.#open.get(event.runId, event.callId);
        if (call !== undefined && !call.started) this.#startCall(out, base, call);
        return;
      }
      case 'tool_call_progress':
        if (this.#open.get(event.runId, event.callId) === undefined) return;
        custom(LOOPCTL_EVENTS.toolProgress, {
          callId: event.callId,
          name: event.name,
          progress: jsonValue(event.progress),
          path,
        });
        return;
      case 'tool_call_completed':
      case 'tool_call_failed': {
        const call = this.#open.get(event.runId, event.callId);
        if (call !== undefined) this.#result(out, base, call, event);
        return;
      }
      case 'run_completed':
      case 'run_cancelled':
      case 'run_failed': {
        const partial = event.type === 'run_completed' ? [] : event.partial;
        const ended = event.type === 'run_cancelled' ? 'cancelled' : 'failed';
        for (const call of this.#open.closeRun(event.runId)) this.#settle(out, base, call, partial, ended);
        return;
      }
      default:
        return;
    }
  }

  #terminal(event: TerminalEvent, out: AGUIEvent[], base: { timestamp?: number }): void {
    this.#closeText(out, base);
    if (event.type === 'run_cancelled' || event.type === 'run_failed') {
      // A terminal settles everything: each call still running or awaiting approval gets its interrupted result.
      const ended = event.type === 'run_cancelled' ? 'cancelled' : 'failed';
      for (const call of this.#open.closeAll()) this.#settle(out, base, call, event.partial, ended);
    } else if (event.suspended !== undefined) {
      // The interrupts name calls the client holds: each pending call is declared (no result: a resume answers it).
      for (const p of event.suspended.pending) {
        const call = this.#open.open(
          { runId: event.runId, callId: p.callId, name: p.name, arguments: p.arguments },
          false,
        );
        if (!call.started) this.#startCall(out, base, call);
      }
    }
    this.#closeStep(out, base);
    out.push(...runEnd(event, this.threadId, base));
  }

  /** `TOOL_CALL_START`, `TOOL_CALL_ARGS` (when there are arguments), `TOOL_CALL_END` of `call`; marks it started. */
  #startCall(out: AGUIEvent[], base: { timestamp?: number }, call: OpenCall): void {
    this.#closeText(out, base);
    call.started = true;
    const { callId, name, arguments: args, path } = call;
    const parentMessageId = (this.#messageId ??= assistantMessageId(this.#runId, 0));
    const metadata = path === undefined ? {} : { metadata: { loopctl: { path } } };
    out.push({
      type: EventType.TOOL_CALL_START,
      ...base,
      toolCallId: callId,
      toolCallName: name,
      parentMessageId,
      ...metadata,
    });
    if (args !== '') out.push({ type: EventType.TOOL_CALL_ARGS, ...base, toolCallId: callId, delta: args });
    out.push({ type: EventType.TOOL_CALL_END, ...base, toolCallId: callId });
  }

  /**
   * The `TOOL_CALL_RESULT` of a call that ended (`tool_call_completed` / `tool_call_failed`): a call denied or
   * refused before it started gets its START here, so the result has a call to answer.
   */
  #result(
    out: AGUIEvent[],
    base: { timestamp?: number },
    call: OpenCall,
    event: Extract<RunEvent, { type: 'tool_call_completed' | 'tool_call_failed' }>,
  ): void {
    if (!call.started) this.#startCall(out, base, call);
    this.#open.close(call.runId, call.callId);
    const { path } = call;
    const result = {
      type: EventType.TOOL_CALL_RESULT,
      ...base,
      messageId: toolResultMessageId(call.runId, call.callId),
      toolCallId: call.callId,
      role: 'tool',
    } as const;
    if (event.type === 'tool_call_completed') {
      out.push({
        ...result,
        content: event.output,
        ...(path === undefined ? {} : { metadata: { loopctl: { path } } }),
      });
      return;
    }
    const loopctl = {
      error: jsonValue(event.error),
      interrupted: event.interrupted,
      ...(event.outcome === undefined ? {} : { outcome: event.outcome }),
      ...(path === undefined ? {} : { path }),
    };
    out.push({ ...result, content: describeValue(event.error.message), metadata: { loopctl } });
  }

  /**
   * The result of a call its run's end cut short (docs/ui.md, "A terminal settles everything"): the text
   * `partial` pairs it with (the engine's interrupted result), `metadata.loopctl` `{ interrupted: true, run:
   * 'cancelled' | 'failed', ran }` (`ran`: it had started; false: it was waiting for approval).
   */
  #settle(
    out: AGUIEvent[],
    base: { timestamp?: number },
    call: OpenCall,
    partial: readonly Item[],
    run: 'cancelled' | 'failed',
  ): void {
    const ran = call.started;
    if (!ran) this.#startCall(out, base, call);
    const paired = partial.find((i) => i.type === 'tool_result' && i.callId === call.callId && i.interrupted);
    const content = paired?.type === 'tool_result' ? paired.output : interruptedResult(call.callId).output;
    const { path } = call;
    out.push({
      type: EventType.TOOL_CALL_RESULT,
      ...base,
      messageId: toolResultMessageId(call.runId, call.callId),
      toolCallId: call.callId,
      content,
      role: 'tool',
      metadata: { loopctl: { interrupted: true, run, ran, ...(path === undefined ? {} : { path }) } },
    });
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

/** The open call of a root event (the run's own call). */
function callOf(event: { runId: string; callId: string; name: string; arguments?: string }): Omit<OpenCall, 'started'> {
  return { runId: event.runId, callId: event.callId, name: event.name, arguments: event.arguments ?? '' };
}

/** A summary call's usage in AG-UI's token names. */
function summaryUsage({ inputTokens, outputTokens, totalTokens }: Usage): TokenUsage {
  return { inputTokens, outputTokens, totalTokens };
}
