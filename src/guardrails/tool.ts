import { EMPTY, Observable, concat, concatMap, defer, throwError } from 'rxjs';
import type { RunContext } from '../engine/run-context.js';
import type { ToolCall } from '../items.js';
import type { CheckSpec } from './check.js';
import { tripOutcome } from './input.js';
import { firstTrip$, type Trip } from './judge.js';
import type { ToolGuardrail, ToolSubject } from './types.js';

/**
 * A tool call's value under the agent's tool guardrails (docs/guardrails.md, "Tool guardrails"): the `'before'`
 * ones check the parsed arguments before `value$` is subscribed (the tool runs only once every one passed), the
 * `'after'` ones check the value it gave before it goes on to the model. The run waits at `tool_call` meanwhile, so
 * a cancel abandons the checks with the call. A trip of a guardrail with `onTrip: 'reject'` (default) fails the
 * call with its `GuardrailTrippedError`, which the model reads as the call's error result; with `'end_run'` it ends
 * the run (`run_failed`, `stopReason: 'guardrail'`) and the call is torn down with it.
 */
export function guardTool$(
  rc: RunContext<any>,
  call: ToolCall,
  args: unknown,
  value$: Observable<unknown>,
): Observable<unknown> {
  const guards = (rc.agent.guardrails?.tool ?? []).filter(
    (g: ToolGuardrail<any>) => g.tools === undefined || g.tools.includes(call.name),
  );
  if (guards.length === 0) return value$;
  const before = guards.filter((g) => g.when === 'before');
  const after = guards.filter((g) => g.when === 'after');
  const base = { callId: call.callId, name: call.name, args };
  const specs = (list: readonly ToolGuardrail<any>[], subject: ToolSubject): CheckSpec<ToolSubject>[] =>
    list.map((guardrail) => ({
      guardrail,
      kind: guardrail.when === 'before' ? ('tool_before' as const) : ('tool_after' as const),
      mode: guardrail.when,
      subject,
      callId: call.callId,
      action: guardrail.onTrip === 'end_run' ? ('end_run' as const) : ('reject_call' as const),
    }));
  const judged$ = (list: readonly ToolGuardrail<any>[], subject: ToolSubject): Observable<never> =>
    firstTrip$(rc, specs(list, subject)).pipe(concatMap((trip) => refuse$(rc, trip, list)));
  const checked$ = after.length === 0 ? value$ : value$.pipe(
    concatMap((result) => concat(judged$(after, { ...base, result }), [result])),
  ); // prettier-ignore
  return before.length === 0
    ? checked$
    : concat(
        judged$(before, base),
        defer(() => checked$),
      );
}

/** A trip: the call's error (`'reject'`), or the run's end (`'end_run'`), after which nothing more is emitted. */
function refuse$(rc: RunContext<any>, trip: Trip, list: readonly ToolGuardrail<any>[]): Observable<never> {
  const guard = list.find((g) => g.name === trip.error.guardrail);
  if (guard?.onTrip !== 'end_run') return throwError(() => trip.error);
  rc.end(tripOutcome(trip));
  return EMPTY;
}
