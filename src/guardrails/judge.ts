import { EMPTY, filter, merge, take, type Observable } from 'rxjs';
import type { RunContext } from '../engine/run-context.js';
import { check$, type CheckSpec, type Judged } from './check.js';

/** A trip: the guardrail's error, for the run's failure (or the call's refusal). */
export type Trip = Extract<Judged, { tripped: true }>;

/**
 * Runs `specs` side by side (each its own check, deadline and events) and emits the first trip, then stops the
 * others (their signals abort); completes without a value once every one has passed.
 */
export function firstTrip$(rc: RunContext<any>, specs: readonly CheckSpec<any>[]): Observable<Trip> {
  if (specs.length === 0) return EMPTY;
  const checks = specs.map((spec) => check$(rc, spec));
  return merge(...checks).pipe(
    filter((j): j is Trip => j.tripped),
    take(1),
  );
}
