import { Observable, catchError, defer, map, retry, tap, throwError, timer } from 'rxjs';
import { ModelCallError, ModelOutputError, isModelCallError, isTimeoutError, serializeError } from '../errors.js';
import { ZERO_USAGE, addUsage } from '../items.js';
import type { ModelProvider, ModelRequest, ModelResponse } from '../model/types.js';
import { backoffDelay, retryPolicy } from './backoff.js';
import { breakerFor } from './breaker.js';
import { modelDeadlines } from './deadlines.js';
import type { RunController, Step } from './run-controller.js';

type AttemptStep = Step | { readonly type: '@response'; readonly response: ModelResponse };

/** Errors worth another attempt (DESIGN.md §6): the adapter's `retryable`, or a model deadline. */
export function isRetryable(err: unknown): boolean {
  return (isModelCallError(err) && err.retryable) || (isTimeoutError(err) && err.kind !== 'tool' && err.kind !== 'run');
}

const isModelFailure = (err: unknown): boolean => isModelCallError(err) || isTimeoutError(err) || err instanceof ModelOutputError;

/**
 * One model call with the engine's recovery (DESIGN.md §6): deadlines on each
 * attempt, a stream that failed after it started rescued once without
 * streaming (row 5), transient errors retried after a backoff sleep (row 9,
 * `retry_scheduled` first), then the fallback model (`fallback_activated`),
 * which is also used directly while the primary's circuit breaker is open.
 * A cancel unsubscribes all of it: never retried, never fed to the breaker
 * (guarantee 4). On success it records the assistant Item and the usage and
 * emits `model_response_completed`.
 */
export function callModel$(rc: RunController<any>, request: Omit<ModelRequest, 'stream'>): Observable<Step> {
  return defer(() => {
    const { model: primary, fallbackModel: fallback, breaker: breakerOptions } = rc.agent;
    const policy = retryPolicy(rc.opts.retry);
    const random = rc.opts.random ?? Math.random;
    let provider = primary;
    let attempt = 0;
    let rescued = false;

    const attempt$ = (p: ModelProvider, stream: boolean, rescue: boolean): Observable<AttemptStep> =>
      new Observable<AttemptStep>((subscriber) => {
        rc.phase = rescue ? 'rescue' : 'model_request';
        subscriber.next({ type: 'model_request_started', model: p.id, attempt: ++attempt, stream });
        if (subscriber.closed || rc.token.isCancelled) return;
        let response: ModelResponse | undefined;
        let started = false;
        let sawText = false;
        rc.scratch.streamingText = '';
        return p
          .call({ ...request, stream })
          .pipe(modelDeadlines(rc.opts.deadlines, rc.scheduler))
          .subscribe({
            next: (event) => {
              if (!started && stream && !rescue) rc.phase = 'model_stream';
              started = true;
              if (event.type === 'text_delta') {
                sawText = true;
                rc.scratch.streamingText += event.delta;
                subscriber.next({ type: 'text_delta', delta: event.delta });
              } else if (event.type === 'response') response = event.response;
            },
            error: (err) => subscriber.error(started && !(err instanceof ModelCallError && err.streamStarted) ? new StreamFailure(err) : err),
            complete: () => {
              if (!response) return subscriber.error(new ModelOutputError(`${p.id} ended its response without a result`));
              if (!sawText && response.text !== '') subscriber.next({ type: 'text_delta', delta: response.text });
              subscriber.next({ type: '@response', response });
              subscriber.complete();
            },
          });
      });

    const pick = (): ModelProvider => {
      if (fallback && provider === primary && !breakerFor(primary, breakerOptions).allow(rc.scheduler.now())) {
        provider = fallback;
        rc.emit({ type: 'fallback_activated', from: primary.id, to: fallback.id, reason: 'circuit_open' });
      }
      return provider;
    };

    const once$ = rc.stage('model_request', () => {
      const p = pick();
      const stream = rc.opts.stream ?? p.stream ?? true;
      const breaker = fallback ? breakerFor(p, p === primary ? breakerOptions : undefined) : undefined;
      return attempt$(p, stream, false).pipe(
        catchError((err) => {
          const failure = unwrap(err);
          if (!stream || rescued || !(err instanceof StreamFailure || (isModelCallError(failure) && failure.streamStarted))) throw failure;
          rescued = true;
          return rc.stage('rescue', () => attempt$(p, false, true));
        }),
        tap({ complete: () => breaker?.success(), error: () => breaker?.failure(rc.scheduler.now()) }),
      );
    });

    const withRetries$ = once$.pipe(
      retry({
        count: policy.maxRetries,
        delay: (err: unknown, retryCount: number) => {
          if (!isRetryable(err)) return throwError(() => err);
          const delayMs = backoffDelay(policy, retryCount, random, isModelCallError(err) ? err.retryAfterMs : undefined);
          rc.emit({ type: 'retry_scheduled', attempt: attempt + 1, delayMs, error: serializeError(err) });
          rc.phase = 'backoff';
          return timer(delayMs, rc.scheduler);
        },
      }),
    );

    return withRetries$.pipe(
      catchError((err) => {
        if (!fallback || provider === fallback || !isModelFailure(err)) throw err;
        provider = fallback;
        rc.emit({ type: 'fallback_activated', from: primary.id, to: fallback.id, reason: err instanceof Error ? err.message : String(err) });
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
  return {
    type: 'model_response_completed',
    finishReason: response.finishReason,
    usage: response.usage ?? ZERO_USAGE,
    ...(response.refusal !== undefined ? { refusal: response.refusal } : {}),
    ...(response.reasoning !== undefined ? { reasoning: response.reasoning } : {}),
  };
}

/** Marks a failure that came after the stream's first event (a rescue candidate). */
class StreamFailure {
  constructor(readonly error: unknown) {}
}

function unwrap(err: unknown): unknown {
  return err instanceof StreamFailure ? err.error : err;
}

