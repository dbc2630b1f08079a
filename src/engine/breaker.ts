import type { ModelProvider } from '../model/types.js';
import type { BreakerOptions } from './types.js';

/**
 * The fallback circuit breaker (DESIGN.md §6): `closed` until
 * `failureThreshold` consecutive failed attempts (default 3), then `open` for
 * `cooldownMs` (default 30 000 ms), then `half_open`: one probe request is
 * let through; its success closes the breaker, its failure re-opens it.
 * Time comes from the caller (the run's scheduler). Cancellations are never
 * reported to it (guarantee 4).
 */
export class CircuitBreaker {
  state: 'closed' | 'open' | 'half_open' = 'closed';
  failures = 0;
  #openedAt = 0;
  #probing = false;
  constructor(readonly failureThreshold = 3, readonly cooldownMs = 30_000) {}

  /** May a request go to this provider now? In `half_open`, only one probe at a time. */
  allow(now: number): boolean {
    if (this.state === 'closed') return true;
    if (this.state === 'open' && now - this.#openedAt >= this.cooldownMs) {
      this.state = 'half_open';
      this.#probing = false;
    }
    if (this.state === 'half_open' && !this.#probing) {
      this.#probing = true;
      return true;
    }
    return false;
  }

  success(): void {
    this.state = 'closed';
    this.failures = 0;
    this.#probing = false;
  }

  failure(now: number): void {
    this.failures++;
    if (this.state === 'half_open' || this.failures >= this.failureThreshold) {
      this.state = 'open';
      this.#openedAt = now;
      this.#probing = false;
    }
  }
}

const breakers = new WeakMap<ModelProvider, CircuitBreaker>();

/** The one breaker of a provider instance, shared by every run that uses it. */
export function breakerFor(provider: ModelProvider, options: BreakerOptions | undefined): CircuitBreaker {
  let breaker = breakers.get(provider);
  if (!breaker) breakers.set(provider, (breaker = new CircuitBreaker(options?.failureThreshold, options?.cooldownMs)));
  return breaker;
}
