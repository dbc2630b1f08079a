import { ConfigurationError } from '../errors.js';
import type { Approvals } from './approvals.js';

/** Links a run's {@link Approvals} to the `RunControl` it was given (internal: the engine calls it). */
export let attachApprovals: (control: RunControl, approvals: Approvals) => () => void;

/**
 * Controls runs from outside (docs/run-control.md), given to `run()` or `start()` as the `control`
 * option; a `RunHandle`'s methods delegate to its own. One control may serve several runs at once:
 * each method acts on the run that has the call.
 * - `approve(callId)`: a call awaiting approval starts (its `tool_call_started` follows).
 * - `reject(callId, reason)`: the call never runs; the model gets `ToolCallRejectedError` with `reason`.
 * Each answers "did it take effect": `true` when the call was awaiting a decision, `false` for an
 * unknown id, a call decided already (the first decision wins), or a run that has ended. A `callId`
 * that is not a string, or a `reason` that is not a string, throws `ConfigurationError` naming it.
 */
export class RunControl {
  readonly #approvals = new Set<Approvals>();

  static {
    attachApprovals = (control, approvals) => {
      control.#approvals.add(approvals);
      return () => void control.#approvals.delete(approvals);
    };
  }

  /** Approves the call `callId` awaiting approval; true if it was awaiting one. */
  approve(callId: string): boolean {
    checkString(callId, 'callId');
    for (const approvals of this.#approvals) if (approvals.decide(callId, { approve: true })) return true;
    return false;
  }

  /** Rejects the call `callId` awaiting approval with `reason` (what the model reads); true if it was awaiting one. */
  reject(callId: string, reason: string): boolean {
    checkString(callId, 'callId');
    checkString(reason, 'reason');
    for (const approvals of this.#approvals) if (approvals.decide(callId, { approve: false, reason })) return true;
    return false;
  }

  /**
   * For `cancelToolCall(callId, reason)`: cancels `callId` if it awaits approval (its `tool_call_failed`
   * is `ToolCallCancelledError`, `interrupted: true`, and the run goes on). True if it was awaiting.
   */
  cancelAwaitingApproval(callId: string, reason: unknown): boolean {
    for (const approvals of this.#approvals) if (approvals.cancel(callId, reason)) return true;
    return false;
  }
}

function checkString(value: unknown, field: string): void {
  if (typeof value !== 'string') throw new ConfigurationError(field, `must be a string (got ${typeof value})`);
}
