import type { CancelPhase, RunFailed } from './events.js';
import type { Item, Usage } from './items.js';
import { describeValue, isInstance, readProp } from './describe.js';

/**
 * Error classes: one base class with `cause`, a few subclasses
 * grouped by cause, and an `isX()` guard each (total: false for a value whose
 * prototype cannot be read). Cancellation is recognised by
 * which token fired, never by an error's `name` (a timeout is not a cancel).
 */
export class LoopctlError extends Error {
  override readonly name: string = 'LoopctlError';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

/** Invalid options or agent definition; `field` names the offending field (e.g. `options.maxTurns`). */
export class ConfigurationError extends LoopctlError {
  override readonly name: string = 'ConfigurationError';
  constructor(
    readonly field: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(`${field}: ${message}`, options);
  }
}

/**
 * A second run started on a mailbox or session that another run is using
 * ("one run per mailbox and session", docs/steering.md). Reported as
 * `run_failed` with `stopReason: 'configuration_error'`.
 */
export class ConcurrentRunError extends ConfigurationError {
  override readonly name: string = 'ConcurrentRunError';
}

/**
 * A model request failed. `status` is the HTTP status when there was one;
 * `retryable` is the adapter's classification (408/409/429/5xx, connection
 * reset, stream idle timeout: "retry transient errors only"); `retryAfterMs` comes from
 * `retry-after-ms` / `retry-after`; `code` is the provider's error code.
 * `streamStarted` is true when the failure came after the first stream event
 * (the engine may rescue such a stream once: checkpoint 5: rescue).
 */
export class ModelCallError extends LoopctlError {
  override readonly name: string = 'ModelCallError';
  readonly status: number | undefined;
  readonly retryable: boolean;
  readonly retryAfterMs: number | undefined;
  readonly code: string | undefined;
  readonly streamStarted: boolean;
  constructor(
    message: string,
    init: {
      status?: number;
      retryable?: boolean;
      retryAfterMs?: number;
      code?: string;
      streamStarted?: boolean;
      cause?: unknown;
    } = {},
  ) {
    super(message, { cause: init.cause });
    this.status = init.status;
    this.retryable = init.retryable ?? false;
    this.retryAfterMs = init.retryAfterMs;
    this.code = init.code;
    this.streamStarted = init.streamStarted ?? false;
  }
}

/**
 * Model output the engine cannot use at the run level. `code` says what kind:
 * `no_result` (a call ended without a response), `malformed_chunk` (a stream
 * chunk or event of the wrong shape), `malformed_response` (a whole response
 * body of the wrong shape), `invalid_output` (the default, for providers that
 * give none). `field` names the offending field as a path, e.g.
 * `choices[0].delta.tool_calls[0]`, when there is one. Not retried and not
 * rescued ("retry transient errors only"); counted by the breaker and eligible
 * for the fallback. A run it ends reports `stopReason: 'model_error'`.
 */
export class ModelOutputError extends LoopctlError {
  override readonly name: string = 'ModelOutputError';
  readonly code: string;
  readonly field: string | undefined;
  constructor(message: string, init: { code?: string; field?: string; cause?: unknown } = {}) {
    super(message, { cause: init.cause });
    this.code = init.code ?? 'invalid_output';
    this.field = init.field;
  }
}

/**
 * The final answer of an agent with an `output` schema was still not valid after `outputRetries`
 * repair turns (docs/run-control.md, "Structured output"): the run fails with
 * `stopReason: 'output_invalid'`, the raw text on `run_failed.output`. `message` says why the last
 * answer was refused (not JSON, or the schema's issues); `attempts` counts the answers checked.
 */
export class OutputValidationError extends LoopctlError {
  override readonly name: string = 'OutputValidationError';
  constructor(
    message: string,
    readonly attempts: number,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** A tool threw or its Observable ended empty; fed back to the model as a tool error. */
export class ToolExecutionError extends LoopctlError {
  override readonly name: string = 'ToolExecutionError';
  constructor(
    readonly toolName: string,
    readonly callId: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/**
 * A hook threw, rejected or errored, or a `beforeToolCall` hook returned a malformed verdict
 * (a security hook fails closed). `hook` names the hook point (e.g. `beforeToolCall`). Fails the
 * run with `stopReason: 'internal_error'` (docs/recovery.md, "Unusable output is a tool error").
 */
export class HookError extends LoopctlError {
  override readonly name: string = 'HookError';
  constructor(
    readonly hook: string,
    cause: unknown,
  ) {
    super(`hook ${hook} failed: ${describeValue(cause, 'thrown value')}`, { cause });
  }
}

/**
 * A `prepareRequest` hook returned changes the engine refuses (docs/long-runs.md, "Request shaping"): not an
 * object of known fields, a field of the wrong kind, a tool name the agent does not have, or Items that are not
 * valid on the wire (a tool call without its result, a result that pairs no call, a call id used twice). `hook`
 * is `'prepareRequest'`; `field` names the offending field (`items[3]`, `activeTools[0]`, …). Nothing was sent;
 * the run fails (`internal_error`, like any hook's failure) and its history is unchanged.
 */
export class RequestShapeError extends HookError {
  override readonly name: string = 'RequestShapeError';
  constructor(
    hook: string,
    readonly field: string,
    problem: string,
  ) {
    super(hook, new TypeError(`${field}: ${problem}`));
    this.message = `hook ${hook} returned a request loopctl refuses: ${field}: ${problem}`;
  }
}

/**
 * A compaction's summary call failed (docs/long-runs.md, "Compaction"): the model call's failure after its
 * retries (`cause`), or a summary that came back empty (`cause` undefined). With the policy's `onFailure: 'fail'`
 * (the default) the run fails with `stopReason: 'model_error'`; nothing was replaced, so the history is unchanged.
 * `model` is the id of the model asked for the summary.
 */
export class CompactionError extends LoopctlError {
  override readonly name: string = 'CompactionError';
  constructor(
    readonly model: string,
    cause: unknown,
  ) {
    const why = cause === undefined ? 'the summary was empty' : describeValue(cause, 'thrown value');
    super(`compaction failed: ${model} gave no summary: ${why}`, { cause });
  }
}

/**
 * The model called a tool the agent does not have ("unusable output is a tool error"): the call
 * never runs and the model gets this error as the call's result. `availableTools` lists the
 * agent's tool names in definition order (empty when it has none); `toolName` is the name the model
 * used. Carried on `tool_call_failed.error` with `availableTools`.
 */
export class UnknownToolError extends LoopctlError {
  override readonly name: string = 'UnknownToolError';
  constructor(
    readonly toolName: string,
    readonly callId: string,
    readonly availableTools: readonly string[],
  ) {
    super(`unknown tool "${toolName}"; available tools: ${availableTools.join(', ') || 'none'}`);
  }
}

/**
 * A tool call that needed approval ("approvals", docs/run-control.md) was rejected by a person:
 * `reject(callId, reason)` (a wait that expired is {@link ToolApprovalExpiredError}). The call never
 * starts; the model gets this error as the call's result (`tool_call_failed`, `interrupted: false`,
 * `outcome: 'rejected'`). `reason` is the reason given.
 */
export class ToolCallRejectedError extends LoopctlError {
  override readonly name: string = 'ToolCallRejectedError';
  constructor(
    readonly toolName: string,
    readonly callId: string,
    readonly reason: string,
  ) {
    super(`the call was rejected: ${reason}`);
  }
}

/**
 * A tool call's approval request expired unanswered ("approvals", docs/run-control.md):
 * `deadlines.approvalMs` (`timeoutMs`, ms) passed with no decision. Not a person's rejection: the model
 * reads "the approval request expired unanswered after N ms; the call did not run", and the call's
 * `tool_call_failed` has `outcome: 'expired'`. The call never starts.
 */
export class ToolApprovalExpiredError extends LoopctlError {
  override readonly name: string = 'ToolApprovalExpiredError';
  constructor(
    readonly toolName: string,
    readonly callId: string,
    readonly timeoutMs: number,
  ) {
    super(`the approval request expired unanswered after ${timeoutMs} ms; the call did not run`);
  }
}

/**
 * A sub-agent's tool call that needs approval, in a run that cannot wait for one ("Nested approvals",
 * docs/run-control.md): the sub-run was given `approvals: 'suspend'` itself under a root that waits, so its
 * suspension would reach no one who resumes it (under a root in suspend mode a sub-run suspends with it). The
 * call fails closed at
 * once, never a silent wait in memory: it never starts, and the sub-agent's model reads "tool <name> needs
 * approval, which this sub-agent cannot wait for …; the call did not run" as its result
 * (`tool_call_failed`, `interrupted: false`).
 */
export class ToolApprovalUnavailableError extends LoopctlError {
  override readonly name: string = 'ToolApprovalUnavailableError';
  constructor(
    readonly toolName: string,
    readonly callId: string,
  ) {
    super(
      `tool ${toolName} needs approval, which this sub-agent cannot wait for: its run suspends for approvals ` +
        `(approvals: 'suspend') and its root run does not, so nothing would resume it; the call did not run`,
    );
  }
}

/**
 * A call of a suspended batch that an earlier resume of the same suspension already started
 * (docs/run-control.md, "Exactly once across resumes"): that run failed or was cancelled before it
 * committed, so the call's result was not kept. It is not run again; the model gets this error as the call's result
 * (`tool_call_failed`, `interrupted: false`; the result Item has `interrupted: true`) and reads that it
 * was not run again and that its effects are unknown. `suspensionId` names the suspension.
 */
export class ToolCallAlreadyStartedError extends LoopctlError {
  override readonly name: string = 'ToolCallAlreadyStartedError';
  constructor(
    readonly toolName: string,
    readonly callId: string,
    readonly suspensionId: string,
  ) {
    super(
      'not run again: an earlier resume of this suspension already started this call, and its result was not ' +
        'kept (that run ended before it committed); its effects are unknown (it may have taken effect): ' +
        'check before asking for it again',
    );
  }
}

/**
 * A continued run's call that had started in the process that died (docs/sessions.md, "No tool runs
 * twice"): its start was recorded under `(runId, callId)` and its result was not journalled, so it is not
 * run again (its tool is not `idempotent`); the model reads that its effects are unknown.
 */
export class ToolCallOutcomeUnknownError extends LoopctlError {
  override readonly name: string = 'ToolCallOutcomeUnknownError';
  constructor(
    readonly toolName: string,
    readonly callId: string,
    readonly runId: string,
  ) {
    super(
      'not run again: the worker stopped while this call ran; its effects are unknown (it may have taken ' +
        'effect): check before asking for it again',
    );
  }
}

/** Why `resume()` refused a suspended run (see {@link ResumeError}). */
export type ResumeErrorCode =
  | 'unknown_call'
  | 'missing_decision'
  | 'stale_session'
  | 'already_resumed'
  | 'version'
  | 'unsigned'
  | 'key_mismatch'
  | 'agent_mismatch'
  | 'call_added'
  | 'arguments_changed'
  | 'pending_removed'
  | 'tampered'
  | 'committed'
  | 'not_journalled'
  | 'ambiguous_call';

/**
 * `resume(agent, suspended, decisions)` refused (docs/run-control.md, "Approvals"): `code` says why —
 * `version`: `suspended.version` is not one this loopctl reads (1), or the value is not a suspension;
 * `unknown_call`: a decision names a call that is not pending (`callId` set); `missing_decision`: a
 * pending call has no decision (`callId` set); `stale_session`: the session's last Item is no longer
 * `suspended.sessionHead`; `already_resumed`: this suspension was resumed before (through the session:
 * its history holds the suspended Items, or a store refused a second commit with the same
 * `suspensionId`; without a session, only within this process). Integrity (the suspension's seal,
 * checked before anything runs; docs/run-control.md, "Integrity"): `unsigned` (no seal),
 * `key_mismatch` (sealed with another `suspensionKey`, or without one in another process),
 * `agent_mismatch` (resumed with another agent, or `agent` rewritten), `call_added` (a call that was not
 * in the suspended batch), `arguments_changed` (a call's name or arguments changed), `pending_removed`
 * (a call that awaited a decision is no longer pending, or its earlier decision is gone), `tampered`
 * (anything else changed). `unknown_call` also names a `suspended.decisions` entry for a call that was
 * not decided before the suspension. `resumeRun(agent, runId)` refused (docs/sessions.md, "Durable runs"):
 * `committed` (the run's commit is stored: nothing to continue), `not_journalled` (no journalled turn),
 * `tampered` (a turn missing between journalled ones).
 * `ambiguous_call`: two pending calls have one decision key (`PendingCall.id`; only possible when call ids
 * contain `/`), so no decision could name one of them alone (`callId` set).
 */
export class ResumeError extends LoopctlError {
  override readonly name: string = 'ResumeError';
  constructor(
    readonly code: ResumeErrorCode,
    message: string,
    readonly callId?: string,
  ) {
    super(`${code}: ${message}`);
  }
}

/**
 * One tool call was cancelled on its own (`RunControl.cancelToolCall`, docs/run-control.md, "Per-call
 * cancel"): the call's `ctx.signal` aborts with this error, and the model gets it as the call's tool
 * error ("cancelled by the user: <reason>", or "cancelled by the user" without one). `reason` is the
 * caller's value exactly as given (`undefined` when none was). Not a cancel of the run: the run goes on.
 */
export class ToolCallCancelledError extends LoopctlError {
  override readonly name: string = 'ToolCallCancelledError';
  constructor(
    readonly toolName: string,
    readonly callId: string,
    readonly reason: unknown,
  ) {
    super(reason === undefined ? 'cancelled by the user' : `cancelled by the user: ${describeValue(reason, 'reason')}`);
  }
}

/** Which deadline expired (docs/recovery.md, "Deadlines"). */
export type TimeoutKind = 'first_event' | 'idle' | 'request' | 'tool' | 'run' | 'commit' | 'guardrail';

/**
 * A deadline expired after `timeoutMs` ms. Not a cancel (guarantee 4: cancelled is not failed), except
 * the run deadline, which cancels with reason `{ type: 'deadline' }`.
 */
export class TimeoutError extends LoopctlError {
  override readonly name: string = 'TimeoutError';
  constructor(
    readonly kind: TimeoutKind,
    readonly timeoutMs: number,
    message?: string,
  ) {
    super(message ?? `${kind} deadline of ${timeoutMs} ms expired`);
  }
}

/** The run reached `maxTurns` turns without a final answer (`stopReason: 'max_turns'`). */
export class MaxTurnsError extends LoopctlError {
  override readonly name: string = 'MaxTurnsError';
  constructor(readonly maxTurns: number) {
    super(`the run reached maxTurns (${maxTurns}) without a final answer`);
  }
}

/** What a run that did not complete leaves behind (carried by both terminal errors). */
export interface RunRemains {
  readonly runId: string;
  readonly partial: readonly Item[];
  readonly undelivered: readonly { readonly id: string; readonly content: string }[];
  readonly usage: Usage;
}

/** The shared base of the two errors `handle.result` rejects with: what the run left behind. */
abstract class RunEndedError extends LoopctlError implements RunRemains {
  readonly runId: string;
  readonly partial: readonly Item[];
  readonly undelivered: readonly { readonly id: string; readonly content: string }[];
  readonly usage: Usage;
  constructor(message: string, init: RunRemains, options?: { cause?: unknown }) {
    super(message, options);
    this.runId = init.runId;
    this.partial = init.partial;
    this.undelivered = init.undelivered;
    this.usage = init.usage;
  }
}

/**
 * `handle.result` rejects with this when the run ended `run_cancelled`; `reason` is kept exactly as given;
 * `stopReason` is `'cancelled'`, as on the event.
 */
export class RunCancelledError extends RunEndedError {
  override readonly name: string = 'RunCancelledError';
  readonly stopReason = 'cancelled' as const;
  readonly reason: unknown;
  readonly phase: CancelPhase;
  constructor(init: RunRemains & { reason: unknown; phase: CancelPhase }) {
    super(`run cancelled at ${init.phase}: ${describeReason(init.reason)}`, init);
    this.reason = init.reason;
    this.phase = init.phase;
  }
}

/**
 * `handle.result` rejects with this when the run ended `run_failed`; `stopReason` is the event's
 * (a failure reason: never `completed` or `cancelled`); `cause` is the original error.
 */
export class RunFailedError extends RunEndedError {
  override readonly name: string = 'RunFailedError';
  readonly stopReason: RunFailed['stopReason'];
  readonly error: SerializedError;
  /** The raw text of the last answer, as on `run_failed.output` (set for `output_invalid` only). */
  readonly output?: string;
  constructor(
    init: RunRemains & {
      stopReason: RunFailed['stopReason'];
      error: SerializedError;
      output?: string;
      cause?: unknown;
    },
  ) {
    super(`run failed (${init.stopReason}): ${init.error.message}`, init, { cause: init.cause });
    this.stopReason = init.stopReason;
    this.error = init.error;
    if (init.output !== undefined) this.output = init.output;
  }
}

/** An error as a plain serialisable object, as carried by `run_failed.error`. */
export interface SerializedError {
  readonly name: string;
  readonly message: string;
  readonly [field: string]: unknown;
}

const OWN_FIELDS = [
  'field',
  'status',
  'retryable',
  'retryAfterMs',
  'code',
  'kind',
  'timeoutMs',
  'maxTurns',
  'toolName',
  'callId',
  'availableTools',
  'hook',
  'model',
  'guardrail',
] as const;

/**
 * Turns any thrown value into a {@link SerializedError}: an Error's name, message and known typed
 * fields (a list of strings is copied; any other field that is not a string, number or boolean is
 * described as text); anything else as
 * `{ name: 'Error', message: <its description> }`. Total: a value that throws when read (a hostile
 * Proxy, a throwing getter) is described as `[unprintable …]`, never thrown on.
 */
export function serializeError(error: unknown): SerializedError {
  if (isInstance(error, Error)) {
    const name = readProp(error, 'name');
    const out: Record<string, unknown> = {
      name: typeof name === 'string' ? name : 'Error',
      message: describeValue(error),
    };
    for (const key of OWN_FIELDS) {
      const value = readProp(error, key);
      if (value === undefined) continue;
      const plain = typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean';
      out[key] = plain ? value : (stringList(value) ?? describeValue(value));
    }
    return out as SerializedError;
  }
  return { name: 'Error', message: describeValue(error, 'thrown value') };
}

/** A copy of `value` when it is an array of strings (read totally), else undefined. */
function stringList(value: unknown): string[] | undefined {
  try {
    return Array.isArray(value) && value.every((v) => typeof v === 'string') ? [...(value as string[])] : undefined;
  } catch {
    return undefined;
  }
}

/**
 * A cancel reason or thrown value as one line of text: strings as they are, Errors by message,
 * the rest as JSON text (cycles marked, BigInt as a decimal string). Never throws: a value that
 * cannot be read is `[unprintable reason]`.
 */
export function describeReason(reason: unknown): string {
  return describeValue(reason, 'reason');
}

/** @returns true when `e` is a {@link LoopctlError}. */
export const isLoopctlError = (e: unknown): e is LoopctlError => isInstance(e, LoopctlError);
/** @returns true when `e` is a {@link ConfigurationError} (including {@link ConcurrentRunError}). */
export const isConfigurationError = (e: unknown): e is ConfigurationError => isInstance(e, ConfigurationError);
/** @returns true when `e` is a {@link ConcurrentRunError}. */
export const isConcurrentRunError = (e: unknown): e is ConcurrentRunError => isInstance(e, ConcurrentRunError);
/** @returns true when `e` is a {@link ModelCallError}. */
export const isModelCallError = (e: unknown): e is ModelCallError => isInstance(e, ModelCallError);
/** @returns true when `e` is a {@link ModelOutputError}. */
export const isModelOutputError = (e: unknown): e is ModelOutputError => isInstance(e, ModelOutputError);
/** @returns true when `e` is a {@link ToolExecutionError}. */
export const isToolExecutionError = (e: unknown): e is ToolExecutionError => isInstance(e, ToolExecutionError);
/** @returns true when `e` is an {@link OutputValidationError}. */
export const isOutputValidationError = (e: unknown): e is OutputValidationError => isInstance(e, OutputValidationError);
/** @returns true when `e` is a {@link TimeoutError}. */
export const isTimeoutError = (e: unknown): e is TimeoutError => isInstance(e, TimeoutError);
/** @returns true when `e` is a {@link MaxTurnsError}. */
export const isMaxTurnsError = (e: unknown): e is MaxTurnsError => isInstance(e, MaxTurnsError);
/** @returns true when `e` is a {@link HookError}. */
export const isHookError = (e: unknown): e is HookError => isInstance(e, HookError);
/** True for a {@link RequestShapeError}. */
export const isRequestShapeError = (e: unknown): e is RequestShapeError => isInstance(e, RequestShapeError);
/** @returns true when `e` is a {@link CompactionError}. */
export const isCompactionError = (e: unknown): e is CompactionError => isInstance(e, CompactionError);
/** @returns true when `e` is an {@link UnknownToolError}. */
export const isUnknownToolError = (e: unknown): e is UnknownToolError => isInstance(e, UnknownToolError);
/** @returns true when `e` is a {@link ToolCallCancelledError}. */
export const isToolCallCancelledError = (e: unknown): e is ToolCallCancelledError =>
  isInstance(e, ToolCallCancelledError);
/** @returns true for a {@link ResumeError}. */
export const isResumeError = (e: unknown): e is ResumeError => isInstance(e, ResumeError);
/** @returns true for a {@link ToolCallAlreadyStartedError}. */
export const isToolCallAlreadyStartedError = (e: unknown): e is ToolCallAlreadyStartedError =>
  isInstance(e, ToolCallAlreadyStartedError);
/** @returns true for a {@link ToolCallOutcomeUnknownError}. */
export const isToolCallOutcomeUnknownError = (e: unknown): e is ToolCallOutcomeUnknownError =>
  isInstance(e, ToolCallOutcomeUnknownError);
/** @returns true for a {@link ToolApprovalExpiredError}. */
export const isToolApprovalExpiredError = (e: unknown): e is ToolApprovalExpiredError =>
  isInstance(e, ToolApprovalExpiredError);
/** @returns true for a {@link ToolApprovalUnavailableError}. */
export const isToolApprovalUnavailableError = (e: unknown): e is ToolApprovalUnavailableError =>
  isInstance(e, ToolApprovalUnavailableError);
/** @returns true for a {@link ToolCallRejectedError}. */
export const isToolCallRejectedError = (e: unknown): e is ToolCallRejectedError => isInstance(e, ToolCallRejectedError);
/** @returns true when `e` is a {@link RunFailedError}. */
export const isRunFailedError = (e: unknown): e is RunFailedError => isInstance(e, RunFailedError);
/**
 * @returns true when `e` reports a cancelled run ({@link RunCancelledError}).
 * Decided by identity, never by `name`: a {@link TimeoutError} is not a cancellation
 * (guarantee 4: cancelled is not failed).
 */
export const isCancellation = (e: unknown): e is RunCancelledError => isInstance(e, RunCancelledError);
