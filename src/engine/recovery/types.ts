import type { Observable, SchedulerLike } from 'rxjs';
import { isModelCallError, isModelOutputError, isTimeoutError } from '../../errors.js';
import type { RunEventDraft } from '../../events.js';
import type { Usage } from '../../items.js';
import type { ModelRequest, ModelResponse } from '../../model/types.js';
import type { Fact } from '../totals.js';
import type { StageContext } from '../waits.js';
import type { RunWrap } from '../internals.js';
import type { Deadlines } from '../types.js';
import type { RetryPolicy } from './backoff.js';

/**
 * What the recovery operators need from a run (docs/recovery.md): its stages (token, hops,
 * waits), its timers' scheduler and the one route of every event.
 */
export interface RecoveryContext extends StageContext {
  readonly scheduler: SchedulerLike;
  emit(draft: RunEventDraft, fact?: Fact): void;
}

/** Usage that failed attempts were billed for (a response came, then the call failed), not yet reported. */
export interface Ledger {
  billed: Usage | undefined;
}

/** One model call (one turn's request), shared by all of its attempts. */
export interface ModelCall {
  readonly request: Omit<ModelRequest, 'stream'>;
  /** Requests sent so far (`model_request_started.attempt` of the last one). */
  attempts: number;
  /** "Rescue once": whether the current provider's broken stream was already rescued in this call. */
  rescued: boolean;
  readonly ledger: Ledger;
}

/** How a run's attempts are made: its deadlines, its `stream` override and context propagation. */
export interface AttemptOptions {
  readonly deadlines: Deadlines | undefined;
  readonly stream: boolean | undefined;
  readonly wrap: RunWrap['model'] | undefined;
  /** The agent has an `output` schema: every `text_delta` is followed by an `output_delta`. */
  readonly structured?: boolean;
}

/**
 * A model call that carries the run it is made for: its context and its options. The chain of recovery operators
 * an agent builds once (model-call.ts) takes them from each call, so no run holds a chain of its own.
 */
export interface RunModelCall extends ModelCall, AttemptOptions {
  /** Where the call's events go and where it waits (the run, or a context of the run: model-call.ts). */
  readonly ctx: RecoveryContext;
  /** The run's `retry` option, defaults filled in. */
  readonly policy: RetryPolicy;
  /** The jitter's source of randomness (the run's `random` option, or `Math.random`). */
  readonly random: () => number;
}

/** Why an attempt is made: nothing for the first of a model call, else the recovery step and its error. */
export interface AttemptCause {
  readonly cause?: 'retry' | 'rescue' | 'fallback';
  readonly error?: unknown;
  /** An event the attempt's stage emits when it starts, before its request (`fallback_activated`). */
  readonly announce?: RunEventDraft;
}

/** The first attempt of a model call. */
export const FIRST_ATTEMPT: AttemptCause = Object.freeze({});

/**
 * Makes attempts of a model call: each subscription sends (at most) one request, or a recovery
 * operator's whole sequence of them, and emits the response as its one value. Events go through
 * the run's `emit`; an error is the model call's failure.
 */
export type Attempts<M extends ModelCall = ModelCall> = (call: M, why: AttemptCause) => Observable<ModelResponse>;

/** A recovery step: attempts made from attempts (retry-transient, rescue-once, the stream gate, the fallback). */
export type RecoveryOperator<M extends ModelCall = ModelCall> = (attempts: Attempts<M>) => Attempts<M>;

/** The fact that reports the billed usage not yet reported, taking it from the ledger. */
export function billedFact(call: ModelCall): Fact | undefined {
  const billed = call.ledger.billed;
  if (billed === undefined) return undefined;
  call.ledger.billed = undefined;
  return { billed };
}

const MODEL_DEADLINES: readonly string[] = ['first_event', 'idle', 'request'];

/** "Retry transient errors only": the adapter's `retryable`, or a model deadline (never a cancel). */
export function isRetryable(err: unknown): boolean {
  return (isModelCallError(err) && err.retryable) || (isTimeoutError(err) && MODEL_DEADLINES.includes(err.kind));
}

/** What the breaker counts and what may switch to the fallback: the model failed (a cancel is never an error here). */
export function isModelFailure(err: unknown): boolean {
  return isModelCallError(err) || isTimeoutError(err) || isModelOutputError(err);
}

/** A failure after a stream's first event (a rescue candidate); never leaves "rescue once". */
export class StreamBroke {
  constructor(readonly error: unknown) {}
}
