import { DEFAULTS } from '../../defaults.js';
import type { RetryOptions } from '../types.js';

/** The retry policy, defaults filled in from `DEFAULTS.retry` (docs/recovery.md, "Backoff with full jitter"). */
export interface RetryPolicy {
  readonly maxRetries: number;
  readonly initialDelayMs: number;
  readonly maxDelayMs: number;
  readonly multiplier: number;
  /** The longest `retry-after` honoured, in ms ("retry-after" in docs/recovery.md). */
  readonly maxRetryAfterMs: number;
}

export function retryPolicy(options: RetryOptions | false | undefined): RetryPolicy {
  const d = DEFAULTS.retry;
  if (options === false) {
    return { maxRetries: 0, initialDelayMs: 0, maxDelayMs: 0, multiplier: 1, maxRetryAfterMs: d.maxRetryAfterMs };
  }
  return {
    maxRetries: options?.maxRetries ?? d.maxRetries,
    initialDelayMs: options?.initialDelayMs ?? d.initialDelayMs,
    maxDelayMs: options?.maxDelayMs ?? d.maxDelayMs,
    multiplier: options?.multiplier ?? d.multiplier,
    maxRetryAfterMs: options?.maxRetryAfterMs ?? d.maxRetryAfterMs,
  };
}

/**
 * The sleep before retry number `retry` (1-based), in whole ms:
 * - `retryAfterMs` when the server gave one, rounded up (never earlier than asked; it is not
 *   capped by `maxDelayMs`: the server knows when it will take the request again). A wait above
 *   `maxRetryAfterMs` never gets here: {@link retryAfterTooLong} fails the call first;
 * - else full jitter: `floor(r * min(maxDelayMs, initialDelayMs * multiplier^(retry-1)))`
 *   with `r = random()` clamped to [0, 1] (NaN counts as 0).
 */
export function backoffDelay(policy: RetryPolicy, retry: number, random: () => number, retryAfterMs?: number): number {
  if (retryAfterMs !== undefined && retryAfterMs >= 0) return Math.ceil(retryAfterMs);
  const ceiling = Math.min(policy.maxDelayMs, policy.initialDelayMs * policy.multiplier ** (retry - 1));
  const r = random();
  return Math.floor((r > 0 ? Math.min(r, 1) : 0) * ceiling);
}

/** True when the server asked for a wait longer than the policy honours ("retry-after": fail at once). */
export function retryAfterTooLong(policy: RetryPolicy, retryAfterMs: number | undefined): retryAfterMs is number {
  return retryAfterMs !== undefined && retryAfterMs > policy.maxRetryAfterMs;
}
