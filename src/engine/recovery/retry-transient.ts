import { Observable, retry, throwError, timer } from 'rxjs';
import { ModelCallError, isModelCallError, serializeError } from '../../errors.js';
import type { ModelResponse } from '../../model/types.js';
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

function retried$<M extends ModelCall>(
  ctx: RecoveryContext,
  policy: RetryPolicy,
  random: () => number,
  attempts: Attempts<M>,
  call: M,
  why: AttemptCause,
): Observable<ModelResponse> {
  // Each resubscription is the next attempt; it says why it is made.
  let next: AttemptCause = why;
  const attempt$ = new Observable<ModelResponse>((subscriber) => attempts(call, next).subscribe(subscriber));
  return attempt$.pipe(
    retry({
      count: policy.maxRetries,
      delay: (err: unknown, retryCount: number) => {
        if (!isRetryable(err)) return throwError(() => err);
        const retryAfterMs = isModelCallError(err) ? err.retryAfterMs : undefined;
        // "retry-after": a wait longer than the policy honours fails at once; never retry earlier than asked.
        if (retryAfterTooLong(policy, retryAfterMs)) {
          return throwError(() => retryAfterError(err as ModelCallError, policy));
        }
        const delayMs = backoffDelay(policy, retryCount, random, retryAfterMs);
        return stageAt(ctx, 'backoff', () => {
          next = { cause: 'retry', error: err };
          const attempt = call.attempts + 1;
          ctx.emit({ type: 'retry_scheduled', attempt, delayMs, error: serializeError(err) }, billedFact(call));
          return timer(delayMs, ctx.scheduler);
        });
      },
    }),
  );
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
