import { Observable, Subscriber, throwError, timer } from 'rxjs';
import { ModelCallError, isModelCallError, serializeError } from '../../errors.js';
import type { ModelResponse } from '../../model/types.js';
import { Relay } from '../relay.js';
import { stageAt } from '../waits.js';
import { backoffDelay, retryAfterTooLong, type RetryPolicy } from './backoff.js';
import {
  billedFact,
  isRetryable,
  type AttemptCause,
  type Attempts,
  type ModelCall,
  type RecoveryContext,
  type RecoveryOperator,
  type RunModelCall,
} from './types.js';

/**
 * "Retry transient errors only" (checkpoint 9: backoff): an attempt that failed with a transient
 * error (`isRetryable`) is made again, up to `policy.maxRetries` times. Before each retry the
 * backoff is a stage at `backoff` (one hop, then a poll: a failure tied with a cancel is never
 * retried) that emits `retry_scheduled` with the exact delay ("backoff with full jitter", or the
 * server's `retry-after`), then sleeps on the run's scheduler. The retry's model_request_started
 * carries `cause: 'retry'` and the error. A `retry-after` longer than `policy.maxRetryAfterMs`
 * fails at once with a non-retryable `ModelCallError` ("retry-after"); any other error passes on.
 */
export function retryTransient(ctx: RecoveryContext, policy: RetryPolicy, random: () => number): RecoveryOperator {
  return (attempts) => (call, why) => retried$(ctx, policy, random, attempts, call, why);
}

/** {@link retryTransient} in the chain an agent shares between its runs (model-call.ts): the run is the call's. */
export const retryTransientInRun: RecoveryOperator<RunModelCall> = (attempts) => (call, why) =>
  retried$(call.ctx, call.policy, call.random, attempts, call, why);

/**
 * RxJS's `defer(() => attempts(call, next)).pipe(retry({ count: policy.maxRetries, delay }))` by hand: the live
 * attempt's subscriber ({@link Retrying}) holds the retry's whole state, where `retry` kept its subscriber, its
 * closures and their contexts alive for as long as the attempt ran (BENCHMARKS.md, section 6.1). The order of
 * effects is `retry`'s (test/retry-order-of-effects.test.ts).
 */
function retried$<M extends ModelCall>(
  ctx: RecoveryContext,
  policy: RetryPolicy,
  random: () => number,
  attempts: Attempts<M>,
  call: M,
  why: AttemptCause,
): Observable<ModelResponse> {
  return new Observable<ModelResponse>((out) => {
    new Retrying(out, ctx, policy, random, attempts, call, why, 0).start();
  });
}

/**
 * The subscriber of one attempt, with the retry's state: how many retries were made (`retried`) and why the next
 * attempt is made (`why`). As `retry`'s inner subscriber it is added to the result's subscriber when made; values
 * and completion pass on; an error asks {@link delay} for its notifier (subscribed before this attempt is torn
 * down), whose first value tears it down and starts the next attempt (a new `Retrying` carrying the state on),
 * whose completion without a value completes the result, whose error is the result's error.
 */
class Retrying<M extends ModelCall> extends Relay<ModelResponse> {
  /** The attempt's subscribe returned (`retry`'s `innerSub` is set). */
  #subscribed = false;
  /** The notifier asked for the next attempt while this one was being subscribed. */
  #again = false;

  constructor(
    out: Subscriber<ModelResponse>,
    private readonly ctx: RecoveryContext,
    private readonly policy: RetryPolicy,
    private readonly random: () => number,
    private readonly attempts: Attempts<M>,
    private readonly call: M,
    private why: AttemptCause,
    private retried: number,
  ) {
    super(out);
    out.add(this);
  }

  start(): void {
    try {
      this.attempts(this.call, this.why).subscribe(this);
    } catch (err) {
      this.error(err); // as `defer` would: a throwing factory is the attempt's error
    }
    this.#subscribed = true;
    if (this.#again) this.#next();
  }

  protected override _next(value: ModelResponse): void {
    try {
      this.out.next(value);
    } catch (err) {
      this.out.error(err);
    }
  }

  protected override _error(err: unknown): void {
    const { out } = this;
    try {
      if (this.retried++ < this.policy.maxRetries) this.delay(err, this.retried).subscribe(new Backoff(out, this));
      else out.error(err);
    } catch (thrown) {
      out.error(thrown);
    } finally {
      this.unsubscribe();
    }
  }

  /** The backoff's notifier fired: the next attempt starts (once this one's subscribe returned). */
  retry(): void {
    if (this.#subscribed) this.#next();
    else this.#again = true;
  }

  #next(): void {
    this.unsubscribe();
    const { out, ctx, policy, random, attempts, call, why, retried } = this;
    new Retrying(out, ctx, policy, random, attempts, call, why, retried).start();
  }

  /** `retry`'s `delay`: the notifier of retry number `retryCount` (1-based) after `err`. */
  private delay(err: unknown, retryCount: number): Observable<unknown> {
    if (!isRetryable(err)) return throwError(() => err);
    const { ctx, policy, call } = this;
    const retryAfterMs = isModelCallError(err) ? err.retryAfterMs : undefined;
    // "retry-after": a wait longer than the policy honours fails at once; never retry earlier than asked.
    if (retryAfterTooLong(policy, retryAfterMs)) {
      return throwError(() => retryAfterError(err as ModelCallError, policy));
    }
    const delayMs = backoffDelay(policy, retryCount, this.random, retryAfterMs);
    return stageAt(ctx, 'backoff', () => {
      this.why = { cause: 'retry', error: err };
      const attempt = call.attempts + 1;
      ctx.emit({ type: 'retry_scheduled', attempt, delayMs, error: serializeError(err) }, billedFact(call));
      return timer(delayMs, ctx.scheduler);
    });
  }
}

/** The subscriber of a backoff's notifier (`retry`'s `notifierSubscriber`): added to the result's subscriber. */
class Backoff extends Relay<unknown, ModelResponse> {
  constructor(
    out: Subscriber<ModelResponse>,
    private readonly attempt: Retrying<any>,
  ) {
    super(out);
    out.add(this);
  }

  protected override _next(): void {
    try {
      this.unsubscribe();
      this.attempt.retry();
    } catch (err) {
      this.out.error(err);
    }
  }
}

/**
 * The error of a model call whose server asked for a longer wait than `retry.maxRetryAfterMs`:
 * not retryable, with the server's `retryAfterMs` and time in its message; `cause` is the server's error.
 */
function retryAfterError(err: ModelCallError, policy: RetryPolicy): ModelCallError {
  const asked = err.retryAfterMs!;
  const limit = `longer than retry.maxRetryAfterMs, ${policy.maxRetryAfterMs / 1000} s`;
  const message = `rate limited, retry after ${asked / 1000} s (${limit})`;
  return new ModelCallError(`${message}: ${err.message}`, {
    ...(err.status !== undefined ? { status: err.status } : {}),
    ...(err.code !== undefined ? { code: err.code } : {}),
    retryable: false,
    retryAfterMs: asked,
    streamStarted: err.streamStarted,
    cause: err,
  });
}
