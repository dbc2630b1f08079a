import { deepFreeze } from './deep-freeze.js';

/**
 * Every default of the library in one place: the engine, the CLI's `--help`,
 * docs/recovery.md and docs/cli.md read them from here. Deep-frozen.
 *
 * - `deadlines` (ms): `firstEventMs` from a streamed request to its first
 *   event, `idleMs` the longest silence between two stream events,
 *   `requestMs` a whole non-streamed request (and a rescue), `commitMs` the
 *   session write at the end of a run, `approvalMs` the wait for a decision on a tool call that
 *   needs approval (its expiry rejects the call). Each can be turned off with `false`.
 * - `retry`: "retry transient errors only" with full-jitter backoff (ms);
 *   a `retry-after` above `maxRetryAfterMs` fails at once.
 * - `maxTurns`: turns before `run_failed` with `stopReason: 'max_turns'`.
 * - `outputRetries`: repair turns after an invalid structured answer (docs/run-control.md).
 * - `breaker`: "fallback behind a breaker" (`cooldownMs` in ms).
 * - `session.leaseTtlMs`: the lease a run takes on a session that has `acquire` ("one run per
 *   mailbox and session", across processes), renewed every third of it (ms).
 */
export const DEFAULTS = deepFreeze({
  deadlines: { firstEventMs: 60_000, idleMs: 30_000, requestMs: 300_000, commitMs: 30_000, approvalMs: 3_600_000 },
  retry: { maxRetries: 2, initialDelayMs: 500, maxDelayMs: 8_000, multiplier: 2, maxRetryAfterMs: 60_000 },
  maxTurns: 20,
  outputRetries: 1,
  breaker: { failureThreshold: 3, cooldownMs: 30_000 },
  session: { leaseTtlMs: 30_000 },
} as const);
