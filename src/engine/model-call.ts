import type { Observable } from 'rxjs';
import type { ModelProvider, ModelRequest, ModelResponse } from '../model/types.js';
import type { RunWrap } from './internals.js';
import { runAttempts } from './recovery/attempt.js';
import { retryPolicy, type RetryPolicy } from './recovery/backoff.js';
import { breakerFor } from './recovery/breaker.js';
import { fallbackWithBreaker } from './recovery/fallback-breaker.js';
import { rescueOnceInRun } from './recovery/rescue-once.js';
import { retryTransientInRun } from './recovery/retry-transient.js';
import { streamGateInRun, type WhenOpen } from './recovery/stream-gate.js';
import {
  FIRST_ATTEMPT,
  type Attempts,
  type Ledger,
  type RecoveryContext,
  type RunModelCall,
} from './recovery/types.js';
import type { RunContext } from './run-context.js';
import type { Agent, BreakerOptions, Deadlines } from './types.js';

/** Attempts of the run's model calls: the run and its options come with each call. */
type RunAttempts = Attempts<RunModelCall>;

/** The recovery chain of each agent, built at its first run (an agent is frozen: its models and breaker stay). */
const agentChains = new WeakMap<Agent<any>, RunAttempts>();
/** The chain of each model a `prepareRequest` hook chose instead of its agent's, built at its first such call. */
const shapedChains = new WeakMap<ModelProvider, RunAttempts>();

/**
 * The engine's recovery (docs/recovery.md) for one provider, from the operators in recovery/, innermost first:
 *
 *   request attempt → rescue once → stream gate (the model_request stage, the breaker) → retry transient
 *
 * Made of functions shared by every run: each takes the run's context and options from the call
 * ({@link RunModelCall}).
 */
function chainOf(provider: ModelProvider, breaker: BreakerOptions | undefined, whenOpen: WhenOpen): RunAttempts {
  const gate = streamGateInRun(breakerFor(provider, breaker), whenOpen);
  return retryTransientInRun(gate(rescueOnceInRun(runAttempts(provider))));
}

/** The agent's chain: its model's, then, with a `fallbackModel`, a fallback with breaker onto the fallback's chain. */
function agentChain(agent: Agent<any>): RunAttempts {
  let chain = agentChains.get(agent);
  if (chain !== undefined) return chain;
  const { model: primary, fallbackModel: fallback, breaker } = agent;
  if (fallback === undefined) chain = chainOf(primary, breaker, breaker === undefined ? 'ignore' : 'wait');
  else {
    const toFallback = fallbackWithBreaker(
      primary.id,
      fallback.id,
      chainOf(fallback, breakerOf(agent, fallback), 'ignore'),
    );
    chain = toFallback(chainOf(primary, breaker, 'refuse'));
  }
  agentChains.set(agent, chain);
  return chain;
}

/** The breaker options of `provider` in `agent`'s chains: the agent's for its own model only. */
function breakerOf(agent: Agent<any>, provider: ModelProvider): BreakerOptions | undefined {
  return provider === agent.model ? agent.breaker : undefined;
}

/** The chain of a model a `prepareRequest` hook chose: retry, rescue and the stream gate (no breaker, no fallback). */
function shapedChain(model: ModelProvider): RunAttempts {
  let chain = shapedChains.get(model);
  if (chain === undefined) shapedChains.set(model, (chain = chainOf(model, undefined, 'ignore')));
  return chain;
}

/**
 * The model calls of one run, with the engine's recovery composed from the operators in recovery/ (see
 * {@link chainOf}), behind a fallback with breaker onto the fallback's own chain of the same operators. The chains
 * are built once per agent (and per model a `prepareRequest` hook chose) and shared by its runs: a run holds its
 * context and its ledger only (BENCHMARKS.md, section 6.1).
 *
 * Every decision is a stage, so a cancel raised in the same tick as the failure that leads to it
 * wins; a cancel is never retried, never fed to a breaker and never triggers a fallback
 * (guarantee 4: cancelled is not failed). `call(request)` emits the model's response as its one
 * value; it errors with the model call's failure.
 */
export class ModelCalls {
  /** Usage of failed attempts that returned a response, until an event (or the run's failure) reports it. */
  readonly ledger: Ledger;

  /**
   * `ctx`: where the calls' events go and where they wait (default: the run itself); a compaction's calls give
   * one that keeps the summary's text out of the run's `text_delta`s (docs/long-runs.md, "Compaction").
   * `ledger`: where billed usage waits to be reported (default: a new one); a compaction's calls share the run's, so
   * a failed summary's billed usage is reported with the next request or the run's failure.
   */
  constructor(
    private readonly rc: RunContext<any>,
    private readonly ctx: RecoveryContext = rc,
    ledger: Ledger = { billed: undefined },
  ) {
    this.ledger = ledger;
    // Built (and the agent's breaker configured: breakerFor) when the agent's first run starts, as before any call.
    agentChain(rc.agent);
  }

  /**
   * One model call (one turn's request): its response, after whatever recovery it took. `model`: the provider a
   * `prepareRequest` hook chose; another than the agent's gets retry, rescue and the stream gate of its own
   * (no breaker, no fallback).
   */
  call(request: Omit<ModelRequest, 'stream'>, model?: ModelProvider): Observable<ModelResponse> {
    const { rc } = this;
    const call = new RunCall(request, this.ledger, this.ctx, rc);
    const primary = rc.agent.model;
    return (model === undefined || model === primary ? agentChain(rc.agent) : shapedChain(model))(call, FIRST_ATTEMPT);
  }

  /** The billed usage not yet reported, taken (for the failure of the run). */
  takeBilled(): ModelCalls['ledger']['billed'] {
    const billed = this.ledger.billed;
    this.ledger.billed = undefined;
    return billed;
  }
}

/** One model call of a run: its attempts' shared state, and the run's options read from the run when asked for. */
class RunCall implements RunModelCall {
  attempts = 0;
  rescued = false;
  #policy: RetryPolicy | undefined;

  constructor(
    readonly request: Omit<ModelRequest, 'stream'>,
    readonly ledger: Ledger,
    readonly ctx: RecoveryContext,
    private readonly rc: RunContext<any>,
  ) {}

  get policy(): RetryPolicy {
    return (this.#policy ??= retryPolicy(this.rc.opts.retry));
  }

  get random(): () => number {
    return this.rc.opts.random ?? Math.random;
  }

  get deadlines(): Deadlines | undefined {
    return this.rc.opts.deadlines;
  }

  get stream(): boolean | undefined {
    return this.rc.opts.stream;
  }

  get wrap(): RunWrap['model'] | undefined {
    return this.rc.internals.wrap?.model;
  }

  /** The agent has an `output` schema and the calls' events are the run's own (not a compaction's). */
  get structured(): boolean {
    return this.ctx === this.rc && this.rc.agent.output !== undefined;
  }
}
