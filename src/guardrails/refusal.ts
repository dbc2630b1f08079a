import type { Outcome, RunContext } from '../engine/run-context.js';
import type { CheckSpec } from './check.js';
import { tripOutcome } from './input.js';
import type { Trip } from './judge.js';
import { DEFAULT_GUARDRAIL_REFUSAL, type OutputGuardrail } from './types.js';

/**
 * What an output guardrail's check spec adds for its trip (docs/guardrails.md, "Refusing instead of failing"): with
 * `onTrip: 'refuse'`, `action: 'refuse_answer'` and the refusal text (its `refusal`, else
 * `DEFAULT_GUARDRAIL_REFUSAL`); nothing with `'fail'` (the default: the trip ends the run).
 */
export function refusalSpec(guardrail: OutputGuardrail<any>): Pick<CheckSpec<unknown>, 'action' | 'refusal'> {
  if (guardrail.onTrip !== 'refuse') return {};
  return { action: 'refuse_answer', refusal: guardrail.refusal ?? DEFAULT_GUARDRAIL_REFUSAL };
}

/**
 * The run's end for an output guardrail's trip: `run_completed` with the refusal as `output` and
 * `finishReason: 'refusal'` for a guardrail with `onTrip: 'refuse'` (its trip's fact put the refusal Item in the
 * run's Items, which the run commits), else `run_failed` (`stopReason: 'guardrail'`, nothing committed).
 */
export function outputTripOutcome(rc: RunContext<any>, trip: Trip): Outcome {
  const name = trip.error.guardrail;
  const guardrail = (rc.agent.guardrails?.output ?? []).find((g) => g.name === name);
  const { refusal } = guardrail === undefined ? {} : refusalSpec(guardrail);
  if (refusal === undefined) return tripOutcome(trip);
  return { kind: 'completed', output: refusal, finishReason: 'refusal' };
}
