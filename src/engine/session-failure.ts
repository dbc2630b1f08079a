import type { RunFailed } from '../events.js';

/**
 * Internal: why the session failed a run at its start (its lease or its load). The run ends
 * `run_failed` with `stopReason` and `error` as the store gave it: the loop turns it into the outcome.
 */
export class SessionFailure {
  constructor(
    readonly stopReason: RunFailed['stopReason'],
    readonly error: unknown,
  ) {}
}
