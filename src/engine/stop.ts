import { EMPTY, type Observable } from 'rxjs';
import type { BudgetFigures, FinishReason } from '../events.js';
import type { Item, ToolCall } from '../items.js';
import type { Outcome, RunContext } from './run-context.js';
import { budgetReason } from './budget/meter.js';
import { errorResult } from './tool-result.js';

/** The tool error of a call a stop at `tool_call_end` kept from starting. */
export const NOT_RUN_MESSAGE = 'not run: the run was stopped';
/** Its error name on `tool_call_failed`. */
export const NOT_RUN_ERROR = 'ToolCallNotRunError';

/**
 * True when a graceful stop at `tool_call_end` was requested: no further tool call starts
 * (docs/run-control.md, "Stop").
 */
export function stopsBeforeCall(rc: RunContext<any>): boolean {
  return rc.stopping?.at === 'tool_call_end';
}

/**
 * A call a stop kept from starting: paired with the tool error "not run: the run was stopped", which
 * rides with its `tool_call_failed` (no `tool_call_started`), so the committed history stays paired.
 */
export function notRun(rc: RunContext<any>, call: ToolCall): Observable<never> {
  const { callId, name } = call;
  const fact = { result: errorResult(callId, NOT_RUN_MESSAGE) };
  const error = { name: NOT_RUN_ERROR, message: NOT_RUN_MESSAGE };
  rc.emit({ type: 'tool_call_failed', callId, name, error, interrupted: false }, fact);
  return EMPTY;
}

/**
 * How a run that reached its stop boundary ends (docs/run-control.md, "Stop"): completed with
 * `stopReason: 'stopped'`, `output` the text of its last assistant Item ('' if none) and `finishReason`
 * that of its last model response (`'stop'` if it had none); it commits what it has, like a completed run.
 */
export function stoppedOutcome(rc: RunContext<any>): Outcome {
  const items = rc.totals.scratch.items;
  return { kind: 'completed', stopped: true, output: lastAssistantText(items), finishReason: lastFinish(rc) };
}

/**
 * How a run that reached a limit of its `budget` ends (docs/long-runs.md, "Budgets"): like a stopped run
 * (`output`, `finishReason`, the commit) with `stopReason: 'budget'` and the figures; with `onLimit: 'cancel'`
 * its token is cancelled with `{ type: 'budget', …figures }` instead (the controller ends it at once) and
 * nothing is returned.
 */
export function budgetEnd(rc: RunContext<any>, figures: BudgetFigures): Outcome[] {
  if (rc.meter.cancels) {
    rc.token.cancel(budgetReason(figures));
    return [];
  }
  const items = rc.totals.scratch.items;
  return [{ kind: 'completed', budget: figures, output: lastAssistantText(items), finishReason: lastFinish(rc) }];
}

function lastAssistantText(items: readonly Item[]): string {
  for (let i = items.length - 1; i >= 0; i--) {
    const item = items[i]!;
    if (item.type === 'assistant') return item.text;
  }
  return '';
}

function lastFinish(rc: RunContext<any>): FinishReason {
  return rc.totals.finishReason ?? 'stop';
}
