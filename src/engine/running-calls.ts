import type { ToolContext } from '../tools/tool.js';

/** A running call as the run reaches it: `cancel` settles it as cancelled at once; false if it had settled. */
export interface CancellableCall {
  cancel(reason: unknown): boolean;
}

/**
 * The tool calls of a run that execute now, by call id (docs/run-control.md, "Per-call cancel"). A call
 * registers itself when it starts and leaves when it settles or is torn down; `cancel` reaches it
 * synchronously, so its `tool_call_failed` is delivered before `cancelToolCall()` returns.
 */
export class RunningCalls {
  /** Made when the first call starts: a run idle before its tools holds none. */
  #calls: Map<string, CancellableCall> | undefined;

  /** Registers a running call (the call's own state object: no closure per call). */
  add(callId: string, call: CancellableCall): void {
    (this.#calls ??= new Map()).set(callId, call);
  }

  /** Removes `call`'s registration under `callId` (idempotent; only this registration). */
  remove(callId: string, call: CancellableCall): void {
    const calls = this.#calls;
    if (calls?.get(callId) === call) calls.delete(callId);
  }

  /** Cancels the running call `callId` with `reason`; false when none with that id runs. */
  cancel(callId: string, reason: unknown): boolean {
    const call = this.#calls?.get(callId);
    return call !== undefined && call.cancel(reason);
  }
}

/** Why a call was cancelled on its own, by its context: a sub-run tool cancels its child token with it. */
const cancelled = new WeakMap<ToolContext<any>, { readonly reason: unknown }>();

/** Internal: marks `ctx`'s call as cancelled on its own with `reason` (before its tool is torn down). */
export function markCallCancelled(ctx: ToolContext<any>, reason: unknown): void {
  cancelled.set(ctx, { reason });
}

/** Internal: `{ reason }` when `ctx`'s call was cancelled on its own, else undefined. */
export function callCancelOf(ctx: ToolContext<any>): { readonly reason: unknown } | undefined {
  return cancelled.get(ctx);
}
