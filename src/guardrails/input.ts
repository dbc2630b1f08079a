import { Observable, concat, defer, type Unsubscribable } from 'rxjs';
import type { Outcome, RunContext } from '../engine/run-context.js';
import { waitingAt } from '../engine/waits.js';
import type { Item } from '../items.js';
import type { CheckSpec } from './check.js';
import { firstTrip$, type Trip } from './judge.js';
import type { InputGuardrail, InputSubject } from './types.js';

/** The run's end for a trip: `run_failed`, `stopReason: 'guardrail'`, the guardrail's error. */
export function tripOutcome(trip: Trip): Outcome {
  return { kind: 'failed', stopReason: 'guardrail', error: trip.error };
}

/**
 * What turn `n`'s input guardrails check: in the first turn every `user` Item of the run so far (its input and the
 * steering drained before it), later the `user` Items the turn's drain added after index `from`; undefined when
 * there is nothing to check (no input guardrail, or no steering this turn).
 */
export function inputSubject(rc: RunContext<any>, n: number, from: number): InputSubject | undefined {
  const guards = rc.agent.guardrails?.input;
  if (guards === undefined || guards.length === 0) return undefined;
  const items = rc.totals.scratch.items.slice(n === 1 ? 0 : from).filter((i) => i.type === 'user');
  if (items.length === 0) return undefined;
  return { items, text: items.map((i: Item) => (i.type === 'user' ? i.text : '')).join('\n'), steering: n > 1 };
}

/**
 * The turn's model call under the agent's input guardrails (docs/guardrails.md, "Input guardrails"). `'before'`
 * guardrails are checked first (the run waits at `hook`, nothing is sent); then the `'parallel'` ones are checked
 * beside the model call: what the call emits (its response, or its failure) is held until every one has passed.
 * A trip ends the turn at once with `ended(outcome)`: emitted synchronously where the verdict arrived, so the run
 * ends there and the model request is unsubscribed (its socket closes) before the terminal event is delivered.
 * Without a subject the model call runs as it is.
 */
export function guardInput$<T>(
  rc: RunContext<any>,
  subject: InputSubject | undefined,
  model: () => Observable<T>,
  ended: (outcome: Outcome) => T,
): Observable<T> {
  if (subject === undefined) return defer(model);
  const guards = rc.agent.guardrails?.input ?? [];
  const specs = (mode: 'before' | 'parallel'): CheckSpec<InputSubject>[] =>
    guards
      .filter((g: InputGuardrail<any>) => (g.mode ?? 'parallel') === mode)
      .map((guardrail) => ({ guardrail, kind: 'input', mode, subject }));
  const before = specs('before');
  const parallel = specs('parallel');
  let tripped = false;
  const before$ = new Observable<T>((subscriber) =>
    firstTrip$(rc, before).subscribe({
      next: (trip) => {
        tripped = true;
        subscriber.next(ended(tripOutcome(trip)));
      },
      error: (err: unknown) => subscriber.error(err),
      complete: () => subscriber.complete(),
    }),
  ).pipe(waitingAt(rc.waits, 'hook'));
  const then$ = defer(() => (tripped ? [] : gate$(rc, parallel, model(), ended)));
  return before.length === 0 ? then$ : concat(before$, then$);
}

/**
 * `model$` beside the checks of `specs`: its values, completion and error are held until every check has passed
 * (the run then waits at `hook` for the checks alone); the first trip emits `ended(outcome)` and ends the gate,
 * which unsubscribes `model$`.
 */
function gate$<T>(
  rc: RunContext<any>,
  specs: readonly CheckSpec<InputSubject>[],
  model$: Observable<T>,
  ended: (outcome: Outcome) => T,
): Observable<T> {
  if (specs.length === 0) return model$;
  return new Observable<T>((subscriber) => {
    let passed = false;
    const held: T[] = [];
    let end: { error: unknown } | 'complete' | undefined;
    let waiting: Unsubscribable | undefined;
    const release = (): void => {
      for (const value of held.splice(0)) subscriber.next(value);
      if (end === 'complete') subscriber.complete();
      else if (end !== undefined) subscriber.error(end.error);
    };
    subscriber.add(
      firstTrip$(rc, specs).subscribe({
        next: (trip) => {
          subscriber.next(ended(tripOutcome(trip)));
          subscriber.complete();
        },
        error: (err: unknown) => subscriber.error(err),
        complete: () => {
          passed = true;
          waiting?.unsubscribe();
          release();
        },
      }),
    );
    if (subscriber.closed) return;
    const hold = (how: { error: unknown } | 'complete'): void => {
      end = how;
      if (passed) return release();
      // The model is done and the checks are not: the run waits for them alone.
      waiting = rc.waits.enter('hook');
      subscriber.add(waiting);
    };
    subscriber.add(
      model$.subscribe({
        next: (value) => (passed ? subscriber.next(value) : void held.push(value)),
        error: (error: unknown) => hold({ error }),
        complete: () => hold('complete'),
      }),
    );
  });
}
