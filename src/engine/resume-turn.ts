import { concat, defer, of, type Observable } from 'rxjs';
import { ResumeError } from '../errors.js';
import { frontendTool } from '../tools/frontend-tool.js';
import type { Item } from '../items.js';
import type { Runnable } from './approval.js';
import { batch$ } from './dispatch.js';
import type { ResumeState } from './internals.js';
import type { RunContext } from './run-context.js';
import { nestedSuspension, sessionHead } from './suspend.js';
import { errorResult, parseArguments } from './tool-result.js';
import { afterBatch$, type Decision } from './turn.js';

/**
 * A resumed run's first step (docs/run-control.md, "Approvals"): the suspended turn goes on where it
 * stopped. The session (when there is one) is checked first: `stale_session` when its last Item is no
 * longer `sessionHead`, `already_resumed` when it holds the suspended run's Items (a resume committed
 * them). Then the open batch's calls without a result run as the waiting path would have run them:
 * each call that awaited approval with its decision already given, the others at once (their
 * `beforeToolCall` hooks and `needsApproval` ran before the suspension), each start recorded first
 * under `(suspensionId, callId)` so that no later resume runs it again (`resumed-call.ts`, docs/run-control.md,
 * "Exactly once across resumes"); a front-end tool's call gets the client's result as its output (or its
 * rejection), with nothing run or recorded; then `turn_completed` and the next turn. Emits the turn's decision.
 */
export function resumeTurn$(rc: RunContext<any>, history: readonly Item[], resume: ResumeState): Observable<Decision> {
  return defer(() => {
    const { suspended, verdicts } = resume;
    if (rc.opts.session !== undefined) checkSession(history, suspended.items, suspended.sessionHead);
    const byName = new Map(rc.agent.tools.map((t) => [t.name, t] as const));
    const runnables: Runnable[] = [];
    const frontend = new Set(suspended.frontend ?? []);
    for (const call of rc.totals.scratch.unanswered()) {
      if (frontend.has(call.callId)) {
        // A front-end tool's call: the client's result is its output; a rejection refuses it. Nothing runs here.
        const answer = resume.answers.get(call.callId);
        const tool = frontendTool(call.name, '', {}, answer);
        const verdict = verdicts.get(call.callId);
        if (answer === undefined && verdict !== undefined) rc.approvals.open(call, verdict);
        runnables.push({ call, tool, args: {}, ...(answer === undefined ? { approval: true } : {}) });
        continue;
      }
      const tool = byName.get(call.name);
      const parsed = tool === undefined ? undefined : parseArguments(tool, call);
      if (tool === undefined || parsed === undefined || !parsed.ok) {
        // The agent changed since the suspension: the call cannot run; the model is told so.
        const message = tool === undefined ? `unknown tool "${call.name}"` : parsed!.ok ? '' : parsed!.message;
        const { callId, name } = call;
        const error = { name: 'ToolExecutionError', message };
        const result = errorResult(callId, message);
        rc.emit({ type: 'tool_call_failed', callId, name, error, interrupted: false }, { result });
        continue;
      }
      const verdict = verdicts.get(call.callId);
      if (verdict !== undefined) rc.approvals.open(call, verdict);
      // Its start is recorded before it runs: no later resume of this suspension runs it again.
      const runnable = { call, tool, args: parsed.args, resumed: { suspensionId: suspended.suspensionId } };
      runnables.push(verdict === undefined ? runnable : { ...runnable, approval: true });
    }
    return concat(
      batch$(rc, runnables),
      defer(() => {
        // A sub-run of the batch suspended again: so does this run ("Nested approvals").
        const nested = nestedSuspension(rc, history, 'tool_calls');
        return nested !== undefined ? of(nested) : afterBatch$(rc, rc.turn);
      }),
    );
  });
}

/** `stale_session` / `already_resumed`, read from the history the resumed run loaded. */
function checkSession(history: readonly Item[], items: readonly Item[], head: string | null): void {
  const first = items.find((i): i is Exclude<Item, { type: 'tool_result' }> => i.type !== 'tool_result');
  if (first !== undefined && history.some((i) => i.type !== 'tool_result' && i.id === first.id)) {
    throw new ResumeError('already_resumed', `the session already holds the Items of suspended run (Item ${first.id})`);
  }
  const now = sessionHead(history);
  if (now !== head) {
    const why = `its last Item is ${now ?? 'none'}, not ${head ?? 'none'}`;
    throw new ResumeError('stale_session', `the session moved on since the suspension (${why})`);
  }
}
