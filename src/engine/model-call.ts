import type { Observable } from 'rxjs';
import type { ModelProvider, ModelRequest, ModelResponse } from '../model/types.js';
import { requestAttempts } from './recovery/attempt.js';
import { retryPolicy } from './recovery/backoff.js';
import { breakerFor } from './recovery/breaker.js';
import { fallbackWithBreaker } from './recovery/fallback-breaker.js';
import { rescueOnce } from './recovery/rescue-once.js';
import { retryTransient } from './recovery/retry-transient.js';
import { streamGate, type WhenOpen } from './recovery/stream-gate.js';
import { FIRST_ATTEMPT, type Attempts, type Ledger, type RecoveryContext } from './recovery/types.js';
import type { RunContext } from './run-context.js';

/**
 * The model calls of one run, with the engine's recovery (docs/recovery.md) composed once per run
 * from the operators in recovery/, innermost first:
 *
 *   request attempt → rescue once → stream gate (the model_request stage, the breaker) → retry
 *   transient → fallback with breaker (onto the fallback's own chain of the same operators)
 *
 * Every decision is a stage, so a cancel raised in the same tick as the failure that leads to it
 * wins; a cancel is never retried, never fed to a breaker and never triggers a fallback
 * (guarantee 4: cancelled is not failed). `call(request)` emits the model's response as its one
 * value; it errors with the model call's failure.
 */
export class ModelCalls {
  /** Usage of failed attempts that returned a response, until an event (or the run's failure) reports it. */
  readonly ledger: Ledger;
  readonly #attempts: Attempts;
  readonly #primary: ModelProvider;
  readonly #chain: (provider: ModelProvider, whenOpen: WhenOpen) => Attempts;
  /** The chains of models a `prepareRequest` hook chose (docs/long-runs.md, "Request shaping"), made once each. */
  #shaped: Map<ModelProvider, Attempts> | undefined;

  /**
   * `ctx`: where the calls' events go and where they wait (default: the run itself); a compaction's calls give
   * one that keeps the summary's text out of the run's `text_delta`s (docs/long-runs.md, "Compaction").
   * `ledger`: where billed usage waits to be reported (default: a new one); a compaction's calls share the run's, so
   * a failed summary's billed usage is reported with the next request or the run's failure.
   */
  constructor(rc: RunContext<any>, ctx: RecoveryContext = rc, ledger: Ledger = { billed: undefined }) {
    this.ledger = ledger;
    const { model: primary, fallbackModel: fallback, breaker } = rc.agent;
    const structured = ctx === rc && rc.agent.output !== undefined;
    const { deadlines, stream } = rc.opts;
    const options = { deadlines, stream, wrap: rc.internals.wrap?.model, structured };
    const policy = retryPolicy(rc.opts.retry);
    const random = rc.opts.random ?? Math.random;
    const chain = (provider: ModelProvider, whenOpen: WhenOpen): Attempts => {
      const gate = streamGate(ctx, breakerFor(provider, provider === primary ? breaker : undefined), whenOpen);
      return retryTransient(ctx, policy, random)(gate(rescueOnce(ctx)(requestAttempts(ctx, provider, options))));
    };
    this.#primary = primary;
    this.#chain = chain;
    if (fallback === undefined) {
      this.#attempts = chain(primary, breaker === undefined ? 'ignore' : 'wait');
    } else {
      const toFallback = fallbackWithBreaker(primary.id, fallback.id, chain(fallback, 'ignore'));
      this.#attempts = toFallback(chain(primary, 'refuse'));
    }
  }

  /**
   * One model call (one turn's request): its response, after whatever recovery it took. `model`: the provider a
   * `prepareRequest` hook chose; another than the agent's gets retry, rescue and the stream gate of its own
   * (no breaker, no fallback).
   */
  call(request: Omit<ModelRequest, 'stream'>, model?: ModelProvider): Observable<ModelResponse> {
    const call = { request, attempts: 0, rescued: false, ledger: this.ledger };
    if (model === undefined || model === this.#primary) return this.#attempts(call, FIRST_ATTEMPT);
    const shaped = (this.#shaped ??= new Map());
    let attempts = shaped.get(model);
    if (attempts === undefined) shaped.set(model, (attempts = this.#chain(model, 'ignore')));
    return attempts(call, FIRST_ATTEMPT);
  }

  /** The billed usage not yet reported, taken (for the failure of the run). */
  takeBilled(): ModelCalls['ledger']['billed'] {
    const billed = this.ledger.billed;
    this.ledger.billed = undefined;
    return billed;
  }
}
