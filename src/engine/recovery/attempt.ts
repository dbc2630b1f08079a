import { Observable, Subscriber } from 'rxjs';
import { isInstance } from '../../describe.js';
import { ModelOutputError, isModelCallError, isModelOutputError, serializeError } from '../../errors.js';
import type { ModelRequestStarted, RunEventDraft } from '../../events.js';
import { ZERO_USAGE, addUsage } from '../../items.js';
import type { ModelEvent, ModelProvider, ModelResponse } from '../../model/types.js';
import { attemptDeadlines, modelDeadlines } from '../deadlines.js';
import { partialValue } from '../output.js';
import {
  StreamBroke,
  billedFact,
  type AttemptCause,
  type AttemptOptions,
  type Attempts,
  type ModelCall,
  type RecoveryContext,
  type RunModelCall,
} from './types.js';

export type { AttemptOptions } from './types.js';

const WHOLE = Object.freeze({ whole: true as const });

/**
 * One request to `provider` (checkpoint 2: model request; checkpoint 3: model stream), the base of
 * every recovery operator. Not a stage: the operator that starts it polls first. It emits
 * `model_request_started` (its `cause` and `error` from `why`), then the answer's `text_delta`s
 * (a response that streamed no text gives its text as one delta), each followed, for a structured
 * agent, by `output_delta` with the attempt's text so far parsed as partial JSON, and emits the
 * response as its value. The request runs under the model deadlines of its kind (a rescue is not streamed, so it
 * gets the request deadline). From a streamed response's first event on, the run waits at
 * `model_stream`. A streamed attempt's failure after its first event (or one its adapter marked
 * `streamStarted`) is wrapped in {@link StreamBroke} for "rescue once" (unusable output, a
 * `ModelOutputError`, never is). A response followed by a failure was
 * billed: its usage goes to the call's ledger.
 */
export function requestAttempts(ctx: RecoveryContext, provider: ModelProvider, options: AttemptOptions): Attempts {
  return (call, why) => attempt$(ctx, provider, options, call, why);
}

/**
 * {@link requestAttempts} in the chain an agent shares between its runs (model-call.ts): the run's context and
 * options are the call's own.
 */
export function runAttempts(provider: ModelProvider): Attempts<RunModelCall> {
  return (call, why) => attempt$(call.ctx, provider, call, call, why);
}

function attempt$(
  ctx: RecoveryContext,
  provider: ModelProvider,
  options: AttemptOptions,
  call: ModelCall,
  why: AttemptCause,
): Observable<ModelResponse> {
  return new Observable<ModelResponse>((subscriber) => {
    const stream = why.cause === 'rescue' ? false : (options.stream ?? provider.stream ?? true);
    const attempt = ++call.attempts;
    ctx.emit(startedDraft(provider.id, attempt, stream, why), billedFact(call));
    if (subscriber.closed || ctx.token.isCancelled) return;
    // The defaults are per attempt: a rescue is not streamed, so it gets the request deadline.
    const limits = attemptDeadlines(options.deadlines, stream);
    const request = Object.assign({}, call.request, { stream, timeoutMs: limits.requestMs });
    const send = () =>
      provider
        .call(request)
        .pipe(modelDeadlines(limits, ctx.scheduler, stream))
        .subscribe(new Attempt(subscriber, ctx, call, provider.id, stream, options.structured === true));
    const wrap = options.wrap;
    subscriber.add(wrap !== undefined ? wrap({ model: provider.id, attempt, stream, request }, send) : send());
  });
}

/**
 * The subscriber of one attempt's provider events: the answer's text so far and its response, in one object
 * (an observer's closures and wrappers stayed alive as long as the stream did).
 */
class Attempt extends Subscriber<ModelEvent> {
  #response: ModelResponse | undefined;
  #started = false;
  #sawText = false;
  /** The attempt's text so far, for output_delta. */
  #text = '';

  constructor(
    private readonly out: Subscriber<ModelResponse>,
    private readonly ctx: RecoveryContext,
    private readonly call: ModelCall,
    private readonly model: string,
    private readonly stream: boolean,
    private readonly structured: boolean,
  ) {
    super();
  }

  #delta(piece: string, fact?: typeof WHOLE): void {
    this.ctx.emit({ type: 'text_delta', delta: piece }, fact);
    if (!this.structured) return;
    this.#text += piece;
    this.ctx.emit({ type: 'output_delta', value: partialValue(this.#text) });
  }

  protected override _next(event: ModelEvent): void {
    if (!this.#started && this.stream) this.out.add(this.ctx.waits.enter('model_stream'));
    this.#started = true;
    if (event.type === 'text_delta') {
      this.#sawText = true;
      this.#delta(event.delta);
    } else if (event.type === 'response') this.#response = event.response;
  }

  protected override _error(err: unknown): void {
    try {
      const response = this.#response;
      const { ledger } = this.call;
      if (response) ledger.billed = addUsage(ledger.billed ?? ZERO_USAGE, response.usage);
      // A stream that broke after its first event (seen here, or as the adapter marked it) may be
      // rescued; unusable output is not a broken stream, so a ModelOutputError never is. The
      // error is a foreign value: classified totally (a revoked Proxy has no readable prototype).
      const afterStart = this.#started || (isModelCallError(err) && err.streamStarted);
      this.out.error(this.stream && afterStart && !isModelOutputError(err) ? new StreamBroke(err) : err);
    } finally {
      this.unsubscribe();
    }
  }

  protected override _complete(): void {
    try {
      const response = this.#response;
      if (!response) {
        const message = `${this.model} ended its response without a result`;
        return this.out.error(new ModelOutputError(message, { code: 'no_result' }));
      }
      if (!this.#sawText && response.text !== '') this.#delta(response.text, WHOLE);
      this.out.next(response);
      this.out.complete();
    } finally {
      this.unsubscribe();
    }
  }
}

function startedDraft(model: string, attempt: number, stream: boolean, why: AttemptCause): RunEventDraft {
  if (why.cause === undefined) return { type: 'model_request_started', model, attempt, stream };
  const draft: Omit<ModelRequestStarted, 'runId' | 'seq' | 'turn' | 'at'> = {
    type: 'model_request_started',
    model,
    attempt,
    stream,
    cause: why.cause,
    ...(why.error !== undefined ? { error: serializeError(why.error) } : {}),
  };
  return draft;
}

/** The error a failed attempt stands for, with a rescue candidate's wrapper removed. */
export function unwrap(err: unknown): unknown {
  return isInstance(err, StreamBroke) ? (err as StreamBroke).error : err;
}
