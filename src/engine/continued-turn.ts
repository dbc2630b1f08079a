import { concat, defer, type Observable } from 'rxjs';
import { stage } from '../cancel/stage.js';
import { prepare$ } from './dispatch.js';
import { batchThenNext$, type Decision, type Turns } from './turn.js';
import { stageAt, waitingAt } from './waits.js';

/**
 * A continued run's first turn when the journal holds its model response (docs/sessions.md, "No tool
 * runs twice"): the turn the dead process had under way goes on from its tool calls, the model is not
 * asked again. At its entry stage (`turn_started`, the turn after the last journalled one), then, waiting
 * at `dispatch`, the response's calls are prepared as the dead process prepared them (arguments,
 * `beforeToolCall` hooks, `needsApproval`: a call awaiting approval waits for its decision again) and
 * run; each start is recorded under `(runId, callId)` (`journalled-call.ts`): a call that had started
 * before the crash is not run again unless its tool is `idempotent`. Then `turn_completed` and the
 * next turn. Emits the turn's decision.
 */
export function continuedTurn$(turns: Turns): Observable<Decision> {
  const { rc } = turns;
  const n = rc.turn + 1;
  const prepared$ = defer(() => {
    const calls = rc.totals.scratch.unanswered();
    return stage(rc.token, () => prepare$(rc, calls), rc.hopScheduler);
  }).pipe(waitingAt(rc.waits, 'dispatch'));
  return concat(
    stageAt(rc, 'turn_entry', () => {
      rc.emit({ type: 'turn_started' });
      return [];
    }),
    defer(() => batchThenNext$(turns, n, prepared$, 'tool_calls')),
  );
}
