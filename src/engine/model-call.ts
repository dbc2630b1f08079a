import { NEVER, Observable, catchError, concatMap, defer, map, race, retry, take, throwError, timer, type MonoTypeOperatorFunction } from 'rxjs';
import { stage } from '../cancel/stage.js';
import {
  ModelCallError,
  ModelOutputError,
  isModelCallError,
  isTimeoutError,
  serializeError,
  type SerializedError,
} from '../errors.js';
import type { AttemptCause } from '../events.js';
import { ZERO_USAGE, addUsage } from '../items.js';
import type { ModelProvider, ModelRequest, ModelResponse } from '../model/types.js';
import { backoffDelay, retryAfterTooLong, retryPolicy, type RetryPolicy } from './backoff.js';
import { breakerFor, type CircuitBreaker } from './breaker.js';
import { attemptDeadlines, modelDeadlines } from './deadlines.js';
import { markRefused, repairResponseCalls, takenIds } from './repair.js';
import type { RunController, Step } from './run-controller.js';

type AttemptStep = Step | { readonly type: '@response'; readonly response: ModelResponse };

const MODEL_DEADLINES: readonly string[] = ['first_event', 'idle', 'request'];

/** "Retry transient errors only": the adapter's `retryable`, or a model deadline (never a cancel). */
export function isRetryable(err: unknown): boolean {
  return (isModelCallError(err) && err.retryable) || (isTimeoutError(err) && MODEL_DEADLINES.includes(err.kind));
}

/** What the breaker counts and what may switch to the fallback: the model failed (a cancel is never an error here). */
const isModelFailure = (err: unknown): boolean => isModelCallError(err) || isTimeoutError(err) || err instanceof ModelOutputError;

/**
 * One model call with the engine's recovery (docs/recovery.md; checkpoint 2:
 * model request to checkpoint 5: rescue, and checkpoint 9: backoff).
 *
 * Every decision is a stage (one hop, then a poll of the run's token), so a
 * cancel raised in the same tick as the failure that leads to it wins:
 * - each attempt (`model_request_started`) runs under the model deadlines;
 * - a stream that failed after its first event is rescued once by a
 *   non-streaming request ("rescue once"; checkpoint 5: rescue);
 * - a transient error (`isRetryable`) is retried: `retry_scheduled` with the
 *   exact delay, then a sleep (checkpoint 9: backoff), then the next attempt;
 * - once the retries are spent, a model failure switches to `fallbackModel`
 *   (`fallback_activated`, its own retries); so does an open breaker;
 * - "the stream gate" (checkpoint 4, phase `stream_gate`): an agent with `breaker`
 *   options and no fallback holds its request while the primary's breaker is
 *   open, until the cool-down ends (then it is the half-open probe) or, while
 *   another run's probe is out, until that probe's outcome.
 * Every wait is torn down by the run's cancel: a cancel is never retried,
 * never fed to a breaker and never triggers a fallback (guarantee 4: cancelled
 * is not failed).
 * On success it records the assistant Item and the usage and emits
 * `model_response_completed`.
 */
export function callModel$(rc: RunController<any>, request: Omit<ModelRequest, 'stream'>): Observable<Step> {
  return defer(() => {
    rc.lastResponse = undefined; // never let a previous turn's response stand in for this one
    const { model: primary, fallbackModel: fallback, breaker: breakerOptions } = rc.agent;
    const consult = fallback !== undefined || breakerOptions !== undefined;
    const policy = retryPolicy(rc.opts.retry);
    const random = rc.opts.random ?? Math.random;
    const breakerOf = (p: ModelProvider): CircuitBreaker => breakerFor(p, p === primary ? breakerOptions : undefined);
    let provider = primary;
    let switchReason: string | undefined;
    let switchError: SerializedError | undefined;
    let attempt = 0;
    let rescued = false;
    // Why the next attempt starts (`model_request_started.cause`), and the error behind it.
    let restart: { cause: AttemptCause; error?: SerializedError } | undefined;

    const attempt$ = (p: ModelProvider, stream: boolean, rescue: boolean): Observable<AttemptStep> =>
      new Observable<AttemptStep>((subscriber) => {
        rc.phase = rescue ? 'rescue' : 'model_request';
        const why = restart;
        restart = undefined;
        subscriber.next({ type: 'model_request_started', model: p.id, attempt: ++attempt, stream, ...why });
        if (subscriber.closed || rc.token.isCancelled) return;
        let response: ModelResponse | undefined;
        let started = false;
        let sawText = false;
        // A rescue keeps the failed stream's text for `partial` until it has an answer of its own.
        if (!rescue) rc.scratch.streamingText = '';
        // The defaults are per attempt: a rescue is not streamed, so it gets the request deadline.
        const limits = attemptDeadlines(rc.opts.deadlines, stream);
        return p
          .call(Object.assign({}, request, { stream, timeoutMs: limits.requestMs }))
          .pipe(modelDeadlines(limits, rc.scheduler, stream))
          .subscribe({
            next: (event) => {
              if (!started && stream) rc.phase = 'model_stream';
              started = true;
              if (event.type === 'text_delta') {
                sawText = true;
                rc.scratch.streamingText += event.delta;
                subscriber.next({ type: 'text_delta', delta: event.delta });
              } else if (event.type === 'response') response = event.response;
            },
            error: (err) => {
              // A response came, then the call failed: it was billed.
              if (response) rc.usage = addUsage(rc.usage, response.usage);
              // Marked for the rescue unless the adapter did already; unusable output is not a broken
              // stream, so a ModelOutputError is never marked (never rescued).
              const marked = (err instanceof ModelCallError && err.streamStarted) || err instanceof ModelOutputError;
              subscriber.error(stream && started && !marked ? new StreamFailure(err) : err);
            },
            complete: () => {
              if (!response) {
                const message = `${p.id} ended its response without a result`;
                return subscriber.error(new ModelOutputError(message, { code: 'no_result' }));
              }
              if (!sawText && response.text !== '') subscriber.next({ type: 'text_delta', delta: response.text });
              subscriber.next({ type: '@response', response });
              subscriber.complete();
            },
          });
      });

    /** Waits at the stream gate until `breaker` may change its answer (cool-down over, or a probe settled). */
    const gate$ = (breaker: CircuitBreaker): Observable<unknown> =>
      defer(() => {
        rc.phase = 'stream_gate';
        const ms = breaker.waitMs(rc.scheduler.now());
        return race(ms === undefined ? NEVER : timer(ms, rc.scheduler), breaker.changed$).pipe(take(1));
      });

    const once$: Observable<AttemptStep> = rc.stage('model_request', (): Observable<AttemptStep> => {
      if (switchReason !== undefined && fallback) {
        provider = fallback;
        rescued = false; // the fallback's stream may be rescued once too
        restart = { cause: 'fallback', ...(switchError ? { error: switchError } : {}) };
        rc.emit({ type: 'fallback_activated', from: primary.id, to: fallback.id, reason: switchReason });
        switchReason = undefined;
      }
      let probe = false;
      if (provider === primary && consult) {
        const breaker = breakerOf(primary);
        if (breaker.allow(rc.scheduler.now())) probe = breaker.state === 'half_open';
        else if (!fallback) return gate$(breaker).pipe(concatMap(() => once$));
        else {
          provider = fallback;
          rc.emit({ type: 'fallback_activated', from: primary.id, to: fallback.id, reason: 'circuit_open' });
          restart = { cause: 'fallback' };
        }
      }
      const p = provider;
      const stream = rc.opts.stream ?? p.stream ?? true;
      return attempt$(p, stream, false).pipe(
        catchError((err) => {
          const failure = unwrap(err);
          const afterStart = err instanceof StreamFailure || (isModelCallError(failure) && failure.streamStarted);
          if (!stream || rescued || !afterStart) throw failure;
          rescued = true;
          restart = { cause: 'rescue', error: serializeError(failure) };
          return rc.stage('rescue', () => attempt$(p, false, true));
        }),
        feedBreaker(rc, breakerOf(p), probe),
      );
    });

    const withRetries$ = once$.pipe(
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
          return rc.stage('backoff', () => {
            const error = serializeError(err);
            restart = { cause: 'retry', error };
            rc.emit({ type: 'retry_scheduled', attempt: attempt + 1, delayMs, error });
            return timer(delayMs, rc.scheduler);
          });
        },
      }),
    );

    return withRetries$.pipe(
      catchError((err) => {
        if (!fallback || provider === fallback || !isModelFailure(err)) throw err;
        switchReason = err instanceof Error ? err.message : String(err);
        switchError = serializeError(err);
        return withRetries$;
      }),
      map((step): Step => (step.type === '@response' ? record(rc, step.response) : step)),
    );
  });
}

/**
 * Where a model response becomes an assistant Item, for every provider: its
 * tool calls are repaired first ("the history is valid on the wire"), and a
 * refused call is marked for dispatch to pair with its error result.
 */
function record(rc: RunController<any>, response: ModelResponse): Step {
  if (response.toolCalls.length > 0) {
    const taken = takenIds(rc, rc.history, rc.scratch.items);
    const cutOff = response.finishReason === 'length';
    const repaired = repairResponseCalls(response.toolCalls, { cutOff, taken, newId: () => rc.nextId() });
    if (repaired.changed) response = { ...response, toolCalls: repaired.calls };
    markRefused(repaired.faults);
  }
  rc.lastResponse = response;
  rc.usage = addUsage(rc.usage, response.usage);
  rc.scratch.addResponse({ type: 'assistant', id: rc.nextId(), text: response.text, toolCalls: response.toolCalls });
  rc.phase = 'dispatch'; // the response is in: a cancel from here on is seen where it is dispatched
  return {
    type: 'model_response_completed',
    finishReason: response.finishReason,
    usage: addUsage(ZERO_USAGE, response.usage), // (0, 0, 0, not reported) when the response had no counts
    ...(response.refusal !== undefined ? { refusal: response.refusal } : {}),
    ...(response.reasoning !== undefined ? { reasoning: response.reasoning } : {}),
  };
}

/**
 * Reports an attempt's outcome to its provider's breaker. A success counts
 * at once; a failure one hop later, after a poll of the run's token, so an
 * error caused by (or tied with) a cancel is never counted (guarantee 4: cancelled is not failed). An
 * attempt torn down with no outcome (a cancel) reports nothing; if it was the
 * half-open probe, the probe is handed back.
 */
function feedBreaker<T>(rc: RunController<any>, breaker: CircuitBreaker, probe: boolean): MonoTypeOperatorFunction<T> {
  return (source) =>
    new Observable<T>((subscriber) => {
      let settled = false;
      const report = (err: unknown): Observable<never> => {
        settled = true;
        if (isModelFailure(err)) breaker.failure(rc.scheduler.now());
        else if (probe) breaker.release();
        return throwError(() => err);
      };
      subscriber.add(() => {
        if (!settled && probe) breaker.release();
      });
      subscriber.add(
        source.subscribe({
          next: (value) => subscriber.next(value),
          error: (err) => void stage(rc.token, () => report(err), rc.hopScheduler).subscribe(subscriber),
          complete: () => {
            settled = true;
            breaker.success();
            subscriber.complete();
          },
        }),
      );
    });
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

/** Marks a failure that came after a stream's first event (a rescue candidate); never leaves an attempt's pipe. */
class StreamFailure {
  constructor(readonly error: unknown) {}
}

function unwrap(err: unknown): unknown {
  return err instanceof StreamFailure ? err.error : err;
}
