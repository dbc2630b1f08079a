import type { Observable } from 'rxjs';
import { stage } from '../cancel/stage.js';
import { sealSuspension } from '../control/seal.js';
import type { Suspended } from '../control/suspended.js';
import type { FinishReason } from '../events.js';
import type { Item } from '../items.js';
import { isFrontendTool } from '../tools/frontend-tool.js';
import type { Runnable } from './approval.js';
import { batch$ } from './dispatch.js';
import type { Outcome, RunContext } from './run-context.js';

/**
 * "Suspend mode" (docs/run-control.md, "Approvals"): with `approvals: 'suspend'`, a batch with calls
 * awaiting a decision ends the run instead of waiting: one stage (so a decision given from a
 * `tool_approval_requested` handler counts, and a cancel in the same frame wins), then, if any call
 * still awaits one, the `suspended` outcome; else (and always in `'wait'` mode) the batch runs. A batch with a
 * call to a front-end tool suspends in either mode, that call pending (`suspended.frontend` names it).
 * Emits the outcome when it suspends, nothing otherwise.
 */
export function suspendOrRun$(
  rc: RunContext<any>,
  history: readonly Item[],
  runnables: readonly Runnable[],
  finishReason: FinishReason,
): Observable<Outcome> {
  // A call to a front-end tool always suspends: the client runs it ("Front-end tools", docs/run-control.md).
  const frontend = runnables.filter((r) => isFrontendTool(r.tool)).map((r) => r.call.callId);
  const asks = suspends(rc) && runnables.some((r) => r.approval);
  if (!asks && frontend.length === 0) return batch$(rc, runnables);
  return stage(
    rc.token,
    (): Observable<Outcome> | Outcome[] => {
      const waiting = new Set([...rc.approvals.awaiting().map((c) => c.callId), ...frontend]);
      if (waiting.size === 0) return batch$(rc, runnables);
      const pending = runnables.map((r) => r.call).filter((c) => waiting.has(c.callId));
      return [{ kind: 'suspended', suspended: suspensionOf(rc, history, pending, frontend), finishReason }];
    },
    rc.hopScheduler,
  );
}

/**
 * Whether the run suspends for approval: the root with `approvals: 'suspend'`; a sub-run when its root does
 * (its suspension reaches the root through its parent: "Nested approvals", docs/run-control.md).
 */
function suspends(rc: RunContext<any>): boolean {
  return rc.internals.parent === undefined ? rc.opts.approvals === 'suspend' : rc.internals.rootSuspends === true;
}

/**
 * After a batch: when a sub-run of it suspended (`rc.nested`), the run suspends too, before `turn_completed`,
 * with each such call open and its sub-run's suspension in `suspended.nested`; else nothing (undefined).
 */
export function nestedSuspension(
  rc: RunContext<any>,
  history: readonly Item[],
  finishReason: FinishReason,
): Outcome | undefined {
  if (rc.nested.size === 0) return undefined;
  const nested = Object.fromEntries(rc.nested);
  return { kind: 'suspended', suspended: suspensionOf(rc, history, [], [], nested), finishReason };
}

/** The suspension of a run at its open batch (see `SuspendedSchema`). */
function suspensionOf(
  rc: RunContext<any>,
  history: readonly Item[],
  pending: Suspended['pending'],
  frontend: readonly string[],
  nested?: Record<string, Suspended>,
): Suspended {
  const unanswered = rc.totals.scratch.unanswered();
  const open = new Set(unanswered.map((c) => c.callId));
  // Only the open batch's decisions: those of earlier batches were for calls that ran already.
  const decisions = Object.fromEntries(Object.entries(rc.approvals.decisions()).filter(([id]) => open.has(id)));
  const s = {
    version: 1 as const,
    // Random, never from `idGenerator`: it names the suspension across processes ("already resumed").
    suspensionId: globalThis.crypto.randomUUID(),
    runId: rc.runId,
    agent: rc.agent.name,
    sessionHead: sessionHead(history),
    turn: rc.turn,
    items: rc.totals.scratch.suspendedItems(),
    pending: pending.map(({ callId, name, arguments: args }) => ({ callId, name, arguments: args })),
    decisions,
    ...(frontend.length > 0 ? { frontend: [...frontend] } : {}),
    ...(nested !== undefined ? { nested } : {}),
    usage: rc.totals.usage,
  };
  return sealSuspension(s, unanswered, rc.opts.suspensionKey);
}

/**
 * The id of a history's last Item (`result:<callId>` for a tool result, which has none), or null for
 * an empty one: what `resume` compares to see that the session moved on ("stale session").
 */
export function sessionHead(history: readonly Item[]): string | null {
  const last = history.at(-1);
  if (last === undefined) return null;
  return last.type === 'tool_result' ? `result:${last.callId}` : last.id;
}
