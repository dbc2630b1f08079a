import { Observable, Subject } from 'rxjs';
import { DEFAULTS } from '../../defaults.js';
import type { ModelProvider } from '../../model/types.js';
import type { BreakerOptions } from '../types.js';

/**
 * The fallback circuit breaker ("fallback behind a breaker"): `closed` until
 * `failureThreshold` consecutive failed attempts (default `DEFAULTS.breaker`: 3), then `open` for
 * `cooldownMs` (default 30 000 ms), then `half_open`: one probe request is
 * let through; its success closes the breaker, its failure re-opens it, and
 * a probe that ends without an outcome (a cancel; guarantee 4: cancelled is not failed) is released
 * for the next request. Time comes from the caller (the run's scheduler).
 * Cancellations are never reported to it: neither a success nor a failure.
 */
export class CircuitBreaker {
  state: 'closed' | 'open' | 'half_open' = 'closed';
  failures = 0;
  #openedAt = 0;
  #probing = false;
  readonly #changed = new Subject<void>();
  /** Emits (no value) after each success, failure or released probe: a waiter at the stream gate looks again. */
  readonly changed$: Observable<void> = this.#changed.asObservable();
  constructor(
    public failureThreshold: number = DEFAULTS.breaker.failureThreshold,
    public cooldownMs: number = DEFAULTS.breaker.cooldownMs,
  ) {}

  /**
   * May a request go to this provider now? Moves `open` to `half_open` once
   * the cool-down is over; in `half_open` only one probe at a time is let
   * through (a `true` there is the probe: report its outcome or `release()` it).
   */
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

  /** Ms until `allow` can say yes: 0 when it can now, the cool-down left while open, undefined while a probe is out. */
  waitMs(now: number): number | undefined {
    if (this.state === 'open') return Math.max(0, this.#openedAt + this.cooldownMs - now);
    return this.state === 'half_open' && this.#probing ? undefined : 0;
  }

  success(): void {
    this.state = 'closed';
    this.failures = 0;
    this.#probing = false;
    this.#changed.next();
  }

  failure(now: number): void {
    this.failures++;
    if (this.state === 'half_open' || this.failures >= this.failureThreshold) {
      this.state = 'open';
      this.#openedAt = now;
      this.#probing = false;
    }
    this.#changed.next();
  }

  /** The probe ended with no outcome (a cancel): the next request may probe. */
  release(): void {
    if (this.state !== 'half_open' || !this.#probing) return;
    this.#probing = false;
    this.#changed.next();
  }
}

const breakers = new WeakMap<ModelProvider, CircuitBreaker>();
const configured = new WeakSet<CircuitBreaker>();

/**
 * The one breaker of a provider instance, shared by every run that uses it.
 * The first explicit options it is given configure it (a breaker first met
 * without options, e.g. by an agent with no `breaker`, adopts them); later
 * options do not change it.
 */
export function breakerFor(provider: ModelProvider, options: BreakerOptions | undefined): CircuitBreaker {
  let breaker = breakers.get(provider);
  if (!breaker) breakers.set(provider, (breaker = new CircuitBreaker()));
  if (options && !configured.has(breaker)) {
    configured.add(breaker);
    breaker.failureThreshold = options.failureThreshold ?? breaker.failureThreshold;
    breaker.cooldownMs = options.cooldownMs ?? breaker.cooldownMs;
  }
  return breaker;
}
