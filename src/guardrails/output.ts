import { Observable } from 'rxjs';
import type { RecoveryContext } from '../engine/recovery/types.js';
import type { Outcome, RunContext } from '../engine/run-context.js';
import { waitingAt } from '../engine/waits.js';
import type { ModelResponse } from '../model/types.js';
import type { CheckSpec } from './check.js';
import { firstTrip$, type Trip } from './judge.js';
import { outputTripOutcome, refusalSpec } from './refusal.js';
import { StreamGate } from './stream-gate.js';
import type { OutputSubject } from './types.js';

const gates = new WeakMap<RunContext<any>, StreamGate>();

/**
 * Where the run's model calls send their events (docs/guardrails.md, "Output guardrails"): a {@link StreamGate} when
 * the agent has `'hold'` or `'parallel'` output guardrails (kept for the run's turns), else undefined (the run
 * itself).
 */
export function outputContext(rc: RunContext<any>): RecoveryContext | undefined {
  const guardrails = rc.agent.guardrails;
  const stream = (guardrails?.output ?? []).filter((g) => g.mode === 'hold' || g.mode === 'parallel');
  if (stream.length === 0) return undefined;
  const gate = new StreamGate(rc, stream, guardrails?.chunk ?? 'sentence');
  gates.set(rc, gate);
  return gate.context;
}

/**
 * The turn's model call under the agent's output guardrails (docs/guardrails.md, "Output guardrails"). A stream
 * guardrail's trip while the answer streams ends the turn at once with `ended(outcome)` (the model call is
 * unsubscribed: the request is aborted). When the response comes (`answer(value)` is it), a final answer is checked
 * whole by every output guardrail (`final: true`), the text of a response with tool calls by the stream ones
 * (`final: false`), while the run waits at `hook`; a pass releases the text still held and emits the response, a
 * trip ends the turn instead (`guardrail_tripped.retracted` when text of the answer was delivered already).
 */
export function guardAnswer$<T>(
  rc: RunContext<any>,
  model$: Observable<T>,
  answer: (value: T) => ModelResponse | undefined,
  ended: (outcome: Outcome) => T,
): Observable<T> {
  const guards = rc.agent.guardrails?.output ?? [];
  if (guards.length === 0) return model$;
  const gate = gates.get(rc);
  return new Observable<T>((subscriber) => {
    const trip = (t: Trip): void => {
      subscriber.next(ended(outputTripOutcome(rc, t)));
      subscriber.complete();
    };
    if (gate !== undefined) subscriber.add(gate.trips$.subscribe({ next: trip, error: (e) => subscriber.error(e) }));
    let checking = false;
    let completed = false;
    subscriber.add(
      model$.subscribe({
        next: (value) => {
          const response = answer(value);
          if (response === undefined) return subscriber.next(value);
          gate?.settle();
          const specs = answerSpecs(rc, gate, response);
          if (specs.length === 0) {
            gate?.release(gate.text.length);
            return subscriber.next(value);
          }
          checking = true;
          const checks$ = firstTrip$(rc, specs).pipe(waitingAt(rc.waits, 'hook'));
          subscriber.add(
            checks$.subscribe({
              next: trip,
              error: (e: unknown) => subscriber.error(e),
              complete: () => {
                if (subscriber.closed) return;
                checking = false;
                gate?.release(gate.text.length);
                subscriber.next(value);
                if (completed) subscriber.complete();
              },
            }),
          );
        },
        error: (e: unknown) => subscriber.error(e),
        complete: () => {
          completed = true;
          if (!checking) subscriber.complete();
        },
      }),
    );
  });
}

/** The checks of a response: a final answer's by every output guardrail, another's text by the stream ones. */
function answerSpecs(
  rc: RunContext<any>,
  gate: StreamGate | undefined,
  response: ModelResponse,
): CheckSpec<OutputSubject>[] {
  const final = response.toolCalls.length === 0 && response.finishReason !== 'pause_turn';
  const subject: OutputSubject = { text: response.text, final };
  const delivered = gate !== undefined ? gate.released > 0 : response.text !== '';
  const stream = gate?.specs(subject, delivered) ?? [];
  if (!final) return response.text === '' ? [] : stream;
  const after = (rc.agent.guardrails?.output ?? [])
    .filter((g) => g.mode === undefined || g.mode === 'after')
    .map((guardrail) => ({
      guardrail,
      kind: 'output' as const,
      mode: 'after' as const,
      subject,
      retracted: delivered,
      ...refusalSpec(guardrail),
    }));
  return [...stream, ...after];
}
