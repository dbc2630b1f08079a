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
import { backoffDelay, retryPolicy } from './backoff.js';
import { breakerFor, type CircuitBreaker } from './breaker.js';
import { modelDeadlines } from './deadlines.js';
import type { RunController, Step } from './run-controller.js';

type AttemptStep = Step | { readonly type: '@response'; readonly response: ModelResponse };

/** "Retry transient errors only": the adapter's `retryable`, or a model deadline (never a cancel). */
export function isRetryable(err: unknown): boolean {
  return (isModelCallError(err) && err.retryable) || (isTimeoutError(err) && err.kind !== 'tool' && err.kind !== 'run');
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
        return p
          .call(Object.assign({}, request, { stream }))
          .pipe(modelDeadlines(rc.opts.deadlines, rc.scheduler, stream))
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
              rc.usage = addUsage(rc.usage, response?.usage); // a response came, then the call failed: it was billed
              subscriber.error(stream && started && !(err instanceof ModelCallError && err.streamStarted) ? new StreamFailure(err) : err);
            },
            complete: () => {
              if (!response) return subscriber.error(new ModelOutputError(`${p.id} ended its response without a result`));
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
          const delayMs = backoffDelay(policy, retryCount, random, isModelCallError(err) ? err.retryAfterMs : undefined);
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

function record(rc: RunController<any>, response: ModelResponse): Step {
  rc.lastResponse = response;
  rc.usage = addUsage(rc.usage, response.usage);
  rc.scratch.addResponse({ type: 'assistant', id: rc.nextId(), text: response.text, toolCalls: response.toolCalls });
  rc.phase = 'dispatch'; // the response is in: a cancel from here on is seen where it is dispatched
  return {
    type: 'model_response_completed',
    finishReason: response.finishReason,
    usage: response.usage ?? ZERO_USAGE,
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

/** Marks a failure that came after a stream's first event (a rescue candidate); never leaves an attempt's pipe. */
class StreamFailure {
  constructor(readonly error: unknown) {}
}

function unwrap(err: unknown): unknown {
  return err instanceof StreamFailure ? err.error : err;
}
