import type { Observable } from 'rxjs';
import { stage } from '../cancel/stage.js';
import { sealSuspension } from '../control/seal.js';
import type { Suspended } from '../control/suspended.js';
import type { FinishReason } from '../events.js';
import type { Item } from '../items.js';
import type { Runnable } from './approval.js';
import { batch$ } from './dispatch.js';
import type { Outcome, RunContext } from './run-context.js';

/**
 * "Suspend mode" (docs/run-control.md, "Approvals"): with `approvals: 'suspend'`, a batch with calls
 * awaiting a decision ends the run instead of waiting: one stage (so a decision given from a
 * `tool_approval_requested` handler counts, and a cancel in the same frame wins), then, if any call
 * still awaits one, the `suspended` outcome; else (and always in `'wait'` mode) the batch runs.
 * Emits the outcome when it suspends, nothing otherwise.
 */
export function suspendOrRun$(
  rc: RunContext<any>,
  history: readonly Item[],
  runnables: readonly Runnable[],
  finishReason: FinishReason,
): Observable<Outcome> {
  if (rc.opts.approvals !== 'suspend' || !runnables.some((r) => r.approval)) return batch$(rc, runnables);
  return stage(
    rc.token,
    (): Observable<Outcome> | Outcome[] => {
      const pending = rc.approvals.awaiting();
      if (pending.length === 0) return batch$(rc, runnables);
      return [{ kind: 'suspended', suspended: suspensionOf(rc, history, pending), finishReason }];
    },
    rc.hopScheduler,
  );
}

/** The suspension of a run at its open batch (see `SuspendedSchema`). */
function suspensionOf(rc: RunContext<any>, history: readonly Item[], pending: Suspended['pending']): Suspended {
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
