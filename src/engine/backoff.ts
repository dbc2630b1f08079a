import type { RetryOptions } from './types.js';

/** Waits longer than this (ms) from `retry-after` are not honoured, as openai-node does. */
export const MAX_RETRY_AFTER_MS = 60_000;

/** The retry policy with its defaults filled in (DESIGN.md §6). */
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
 * The sleep before retry number `retry` (1-based), in ms: `retryAfterMs` when
 * the server gave one (0–60 s), else full jitter: `random() * min(maxDelayMs,
 * initialDelayMs * multiplier^(retry-1))`, floored to whole ms.
 */
export function backoffDelay(policy: RetryPolicy, retry: number, random: () => number, retryAfterMs?: number): number {
  if (retryAfterMs !== undefined && retryAfterMs >= 0 && retryAfterMs <= MAX_RETRY_AFTER_MS) return retryAfterMs;
  const ceiling = Math.min(policy.maxDelayMs, policy.initialDelayMs * policy.multiplier ** (retry - 1));
  return Math.floor(random() * ceiling);
}
