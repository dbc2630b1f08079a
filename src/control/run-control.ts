import { ConfigurationError } from '../errors.js';
import { checkStopOptions, type RunStopOptions, type StopRequest } from './stop.js';
import { checkCallId } from './call-cancel.js';

/**
 * Internal: what a live run answers to its {@link RunControl} (the engine's run controller implements
 * it). Each method answers "did it take effect".
 */
export interface ControlledRun {
  /** A graceful stop (validated already); false when the run's outcome is decided or a stop was requested. */
  stop(request: StopRequest): boolean;
  /** Cancels one running call; false when no call with that id is running. */
  cancelToolCall(callId: string, reason: unknown): boolean;
}

/** The live run each control acts on (internal: a run attaches itself while it lives). */
const attached = new WeakMap<RunControl, ControlledRun>();

/**
 * Controls one live run beyond a hard cancel (docs/run-control.md): a graceful stop at a boundary and a
 * cancel of one tool call. Give it to `run()` or `start()` as `options.control`; a `RunHandle` has one of
 * its own (`options.control` when given) and its `stop` / `cancelToolCall` delegate to it. A control
 * acts on the run it was given to while that run lives: before that run starts and once it has ended
 * its methods answer `false`. One control serves one live run at a time: a second run given it while the
 * first lives ends `run_failed` (`configuration_error`, a `ConcurrentRunError` naming `options.control`).
 *
 * Bad input throws a `ConfigurationError` naming the field (`at`, `graceMs`, `callId`), also when no
 * run is live; a well-formed request that cannot take effect answers `false`.
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
   * Cancels one running tool call of the live run (docs/run-control.md, "Per-call cancel"): its
   * `ctx.signal` aborts (an Observable tool is unsubscribed, a sub-run is cancelled on its own token with
   * `reason`), and its `tool_call_failed { interrupted: true }` (error `ToolCallCancelledError`, the model
   * reads "cancelled by the user: <reason>") is delivered before this returns, even when the tool ignores
   * its signal. The other calls and the run go on.
   *
   * @returns true when the call was running; false for an id that names no running call (not started,
   *   finished, unknown) or when no run is live.
   * @throws {ConfigurationError} naming `callId` when it is not a non-empty string.
   */
  cancelToolCall(callId: string, reason?: unknown): boolean {
    checkCallId(callId);
    const live = attached.get(this);
    return live !== undefined && live.cancelToolCall(callId, reason);
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
  let ok = false;
  try {
    ok = value instanceof RunControl;
  } catch {
    ok = false;
  }
  if (!ok) throw new ConfigurationError('options.control', 'must be a RunControl (new RunControl())');
}
