import {
  NEVER,
  Observable,
  Subscriber,
  concatMap,
  race,
  take,
  throwError,
  timer,
  type MonoTypeOperatorFunction,
} from 'rxjs';
import { stage } from '../../cancel/stage.js';
import type { ModelResponse } from '../../model/types.js';
import { stageAt, waitingAt } from '../waits.js';
import { unwrap } from './attempt.js';
import type { CircuitBreaker } from './breaker.js';
import {
  isModelFailure,
  type AttemptCause,
  type Attempts,
  type ModelCall,
  type RecoveryContext,
  type RecoveryOperator,
  type RunModelCall,
} from './types.js';

/**
 * What an attempt does when its provider's breaker is open: `wait` at the stream gate (an agent with
 * `breaker` options and no fallback), `refuse` with {@link CircuitOpen} (an agent with a fallback,
 * which switches), or `ignore` it (an agent with neither: the breaker only hears outcomes).
 */
export type WhenOpen = 'wait' | 'refuse' | 'ignore';

/** The breaker of the attempt's provider is open: the fallback operator switches ("fallback behind a breaker"). */
export class CircuitOpen {}

/**
 * The model request stage of each attempt, behind its provider's breaker (checkpoint 2: model
 * request; checkpoint 4: stream gate). One hop, then a poll ("cancel wins at a stage start"),
 * then, in the stage: the attempt's `announce` (a `fallback_activated`) is emitted, the breaker
 * is asked and the attempt made. "The stream gate": with `wait`, an open breaker holds the request
 * at `stream_gate` until its cool-down ends or another run's probe settles, then the stage starts
 * over (and may be the half-open probe); the wait holds no request open and ends with the run's
 * cancel. The attempt's outcome is reported to the breaker (see {@link fedTo}).
 */
export function streamGate(ctx: RecoveryContext, breaker: CircuitBreaker, whenOpen: WhenOpen): RecoveryOperator {
  return (attempts) => (call, why) => gated$(ctx, breaker, whenOpen, attempts, call, why);
}

/** {@link streamGate} in the chain an agent shares between its runs (model-call.ts): the run is the call's. */
export function streamGateInRun(breaker: CircuitBreaker, whenOpen: WhenOpen): RecoveryOperator<RunModelCall> {
  return (attempts) => (call, why) => gated$(call.ctx, breaker, whenOpen, attempts, call, why);
}

function gated$<M extends ModelCall>(
  ctx: RecoveryContext,
  breaker: CircuitBreaker,
  whenOpen: WhenOpen,
  attempts: Attempts<M>,
  call: M,
  why: AttemptCause,
): Observable<ModelResponse> {
  return stageAt(ctx, 'model_request', () => {
    if (why.announce !== undefined) ctx.emit(why.announce);
    let probe = false;
    if (whenOpen !== 'ignore') {
      if (breaker.allow(ctx.scheduler.now())) probe = breaker.state === 'half_open';
      else if (whenOpen === 'refuse') return throwError(() => new CircuitOpen());
      else return gate$(ctx, breaker).pipe(concatMap(() => gated$(ctx, breaker, whenOpen, attempts, call, why)));
    }
    return attempts(call, why).pipe(fedTo(ctx, breaker, probe));
  });
}

/** Waits at `stream_gate` until `breaker` may change its answer (cool-down over, or a probe settled). */
function gate$(ctx: RecoveryContext, breaker: CircuitBreaker): Observable<unknown> {
  const ms = breaker.waitMs(ctx.scheduler.now());
  const change$ = race(ms === undefined ? NEVER : timer(ms, ctx.scheduler), breaker.changed$).pipe(take(1));
  return change$.pipe(waitingAt(ctx.waits, 'stream_gate'));
}

/**
 * Reports an attempt's outcome to its provider's breaker. A success counts at once; a failure one
 * hop later, after a poll of the run's token, so an error caused by (or tied with) a cancel is
 * never counted (guarantee 4: cancelled is not failed). An attempt torn down with no outcome (a
 * cancel) reports nothing; if it was the half-open probe, the probe is handed back.
 */
export function fedTo(
  ctx: RecoveryContext,
  breaker: CircuitBreaker,
  probe: boolean,
): MonoTypeOperatorFunction<ModelResponse> {
  return (source) =>
    new Observable<ModelResponse>((subscriber) => {
      const fed = new Fed(subscriber, ctx, breaker, probe);
      if (probe) {
        subscriber.add(() => {
          if (!fed.settled) breaker.release();
        });
      }
      subscriber.add(fed);
      source.subscribe(fed);
    });
}

/** The attempt's subscriber of {@link fedTo}: one object, where an observer took three closures and two wrappers. */
class Fed extends Subscriber<ModelResponse> {
  settled = false;

  constructor(
    private readonly out: Subscriber<ModelResponse>,
    private readonly ctx: RecoveryContext,
    private readonly breaker: CircuitBreaker,
    private readonly probe: boolean,
  ) {
    super();
  }

  protected override _next(value: ModelResponse): void {
    this.out.next(value);
  }

  protected override _error(err: unknown): void {
    const { ctx } = this;
    try {
      stage(ctx.token, () => this.#report(err), ctx.hopScheduler).subscribe(this.out);
    } finally {
      this.unsubscribe();
    }
  }

  protected override _complete(): void {
    try {
      this.settled = true;
      this.breaker.success();
      this.out.complete();
    } finally {
      this.unsubscribe();
    }
  }

  #report(err: unknown): Observable<never> {
    this.settled = true;
    if (isModelFailure(unwrap(err))) this.breaker.failure(this.ctx.scheduler.now());
    else if (this.probe) this.breaker.release();
    return throwError(() => err);
  }
}
