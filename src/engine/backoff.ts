import type { RetryOptions } from './types.js';

/** Waits longer than this (ms) from `retry-after` are not honoured (the computed backoff is used), as openai-node does. */
export const MAX_RETRY_AFTER_MS = 60_000;

/** The retry policy with its defaults filled in (docs/recovery.md, "Backoff with full jitter"). */
export interface RetryPolicy {
  readonly maxRetries: number;
  readonly initialDelayMs: number;
  readonly maxDelayMs: number;
  readonly multiplier: number;
}

export function retryPolicy(options: RetryOptions | false | undefined): RetryPolicy {
  if (options === false) return { maxRetries: 0, initialDelayMs: 0, maxDelayMs: 0, multiplier: 1 };
  return {
    maxRetries: options?.maxRetries ?? 2,
    initialDelayMs: options?.initialDelayMs ?? 500,
    maxDelayMs: options?.maxDelayMs ?? 8_000,
    multiplier: options?.multiplier ?? 2,
  };
}

/**
 * The sleep before retry number `retry` (1-based), in whole ms:
 * - `retryAfterMs` when the server gave one within 0–60 s, exactly (the
 *   server knows when it will take the request again; it is not capped by
 *   `maxDelayMs`);
 * - else full jitter: `floor(r * min(maxDelayMs, initialDelayMs * multiplier^(retry-1)))`
 *   with `r = random()` clamped to [0, 1] (NaN counts as 0).
 */
export function backoffDelay(policy: RetryPolicy, retry: number, random: () => number, retryAfterMs?: number): number {
  if (retryAfterMs !== undefined && retryAfterMs >= 0 && retryAfterMs <= MAX_RETRY_AFTER_MS) return Math.ceil(retryAfterMs);
  const ceiling = Math.min(policy.maxDelayMs, policy.initialDelayMs * policy.multiplier ** (retry - 1));
  const r = random();
  return Math.floor((r > 0 ? Math.min(r, 1) : 0) * ceiling);
}
