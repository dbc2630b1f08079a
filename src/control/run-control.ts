import { ConfigurationError } from '../errors.js';
import type { ApprovalDecision } from './suspended.js';
import { checkStopOptions, type RunStopOptions, type StopRequest } from './stop.js';
import { parseRunCommand } from './command.js';

/**
 * Internal: what a live run answers to its {@link RunControl} (the engine's run controller implements
 * it). Each method answers "did it take effect".
 */
export interface ControlledRun {
  /** A graceful stop (validated already); false when the run's outcome is decided or a stop was requested. */
  stop(request: StopRequest): boolean;
  /** Cancels one running call or one call awaiting approval; false when no such call has that id. */
  cancelToolCall(callId: string, reason: unknown): boolean;
  /** Decides one call awaiting approval; false when no call with that id awaits a decision. */
  decide(callId: string, decision: ApprovalDecision): boolean;
  /** Cancels one call awaiting approval; false when no call with that id awaits a decision. */
  cancelAwaitingApproval(callId: string, reason: unknown): boolean;
}

/** The live run each control acts on (internal: a run attaches itself while it lives). */
const attached = new WeakMap<RunControl, ControlledRun>();

/**
 * Controls one live run beyond a hard cancel (docs/run-control.md): a graceful stop at a boundary, a
 * cancel of one tool call, and the decision on a call awaiting approval. Give it to `run()`, `start()`
 * or `resume()` as `options.control`; a `RunHandle` has one of its own (`options.control` when given)
 * and its `stop` / `cancelToolCall` / `approve` / `reject` delegate to it. A control acts on the run it
 * was given to while that run lives: before that run starts and once it has ended its methods answer
 * `false`. One control serves one live run at a time: a second run given it while the first lives ends
 * `run_failed` (`configuration_error`, a `ConcurrentRunError` naming `options.control`).
 *
 * Bad input throws a `ConfigurationError` naming the field (`at`, `graceMs`, `callId`, `reason`) by the run
 * commands' one rule (`parseRunCommand`: the same error as the HTTP route and the queue give), also
 * when no run is live; a well-formed request that cannot take effect answers `false`.
 *
 * @example
 * const control = new RunControl();
 * run(agent, 'migrate the tables', { control }).subscribe(render);
 * shutdown$.subscribe(() => control.stop({ at: 'turn_end', graceMs: 30_000 }));
 */
export class RunControl {
  /**
   * Graceful stop (docs/run-control.md, "Stop"): `at: 'turn_end'` (the default) lets the current turn
   * finish and starts no further model request; `at: 'tool_call_end'` lets running tool calls finish and
   * pairs every call not started with the tool error "not run: the run was stopped". The run emits
   * `stop_requested { at, graceMs? }` at once and ends `run_completed` with `stopReason: 'stopped'` (or
   * `'completed'` when it was giving its final answer), committing its history. `graceMs` (no default)
   * bounds the wait: on expiry the run is cancelled with reason `{ type: 'stop_timeout', graceMs }`.
   * A call awaiting approval has not reached the boundary: the stop waits for its decision (or `graceMs`).
   *
   * @returns true when the stop was taken; false when no run is live, its outcome is decided, or a stop
   *   was requested before (the first one stands).
   * @throws {ConfigurationError} naming `at` or `graceMs` for a bad value.
   */
  stop(options?: RunStopOptions): boolean {
    const request = checkStopOptions(options);
    const live = attached.get(this);
    return live !== undefined && live.stop(request);
  }

  /**
   * Cancels one tool call of the live run that is running or awaiting approval (docs/run-control.md,
   * "Per-call cancel"): a running call's `ctx.signal` aborts (an Observable tool is unsubscribed, a sub-run
   * is cancelled on its own token with `reason`); a call awaiting approval never starts. Its
   * `tool_call_failed { interrupted: true }` (error `ToolCallCancelledError`, the model reads "cancelled
   * by the user: <reason>") is delivered before this returns, even when the tool ignores its signal.
   * The other calls and the run go on.
   *
   * @returns true when the call was running or awaiting approval; false for an id that names neither
   *   (not started, finished, unknown) or when no run is live.
   * @throws {ConfigurationError} naming `callId` when it is not a non-empty string.
   */
  cancelToolCall(callId: string, reason?: unknown): boolean {
    parseRunCommand({ op: 'cancel_tool_call', callId, reason });
    const live = attached.get(this);
    return live !== undefined && live.cancelToolCall(callId, reason);
  }

  /**
   * Approves the call `callId` awaiting approval ("Approvals", docs/run-control.md): it starts (its
   * `tool_call_started` follows).
   *
   * @returns true when the call was awaiting a decision; false for an unknown id, a call decided already
   *   (the first decision wins) or a run that has ended.
   * @throws {ConfigurationError} naming `callId` when it is not a non-empty string.
   */
  approve(callId: string): boolean {
    parseRunCommand({ op: 'decide', callId, approve: true });
    const live = attached.get(this);
    return live !== undefined && live.decide(callId, { approve: true });
  }

  /**
   * Rejects the call `callId` awaiting approval with `reason`: it never runs; its `tool_call_failed`
   * carries `ToolCallRejectedError` with `reason`, which the model reads.
   *
   * @returns true when the call was awaiting a decision (as {@link approve}).
   * @throws {ConfigurationError} naming `callId` (not a non-empty string) or `reason` (not a string).
   */
  reject(callId: string, reason: string): boolean {
    parseRunCommand({ op: 'decide', callId, approve: false, reason });
    const live = attached.get(this);
    return live !== undefined && live.decide(callId, { approve: false, reason });
  }

  /**
   * Cancels `callId` only if it awaits approval (the part of {@link cancelToolCall} that reaches such a
   * call): its `tool_call_failed` is `ToolCallCancelledError`, `interrupted: true`, and the run goes on.
   *
   * @returns true if it was awaiting a decision.
   * @throws {ConfigurationError} naming `callId` when it is not a non-empty string.
   */
  cancelAwaitingApproval(callId: string, reason?: unknown): boolean {
    parseRunCommand({ op: 'cancel_tool_call', callId, reason });
    const live = attached.get(this);
    return live !== undefined && live.cancelAwaitingApproval(callId, reason);
  }
}

/**
 * Internal: `run` starts being controlled by `control`. Returns false (nothing changed) when another
 * live run holds it.
 */
export function attachRun(control: RunControl, run: ControlledRun): boolean {
  const current = attached.get(control);
  if (current !== undefined && current !== run) return false;
  attached.set(control, run);
  return true;
}

/** Internal: `run` has ended; its control is free for the next run (a no-op when `run` does not hold it). */
export function detachRun(control: RunControl, run: ControlledRun): void {
  if (attached.get(control) === run) attached.delete(control);
}

/** `options.control` of `run()` / `start()`: a {@link RunControl}, or a `ConfigurationError` naming it. */
export function checkControl(value: unknown): void {
  if (value === undefined) return;
  let ok: boolean;
  try {
    ok = value instanceof RunControl;
  } catch {
    ok = false;
  }
  if (!ok) throw new ConfigurationError('options.control', 'must be a RunControl (new RunControl())');
}
