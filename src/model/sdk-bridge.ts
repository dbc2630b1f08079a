import { Observable, type Subscriber, type Unsubscribable } from 'rxjs';
import { ModelOutputError } from '../errors.js';
import type { ModelEvent, ModelResponse } from './types.js';

/**
 * What a provider's request body sees while it runs inside {@link sdkBridge}: `closed` once the subscriber
 * unsubscribed (emit nothing more, return), `started` to set once the first streamed event was read (errors
 * after it are classified as mid-stream), `release` to set to what closes an open body reader or SDK iterator
 * (called once, on unsubscribe), and `emit` for deltas (false once closed).
 */
export interface BridgeContext {
  closed: boolean;
  started: boolean;
  release: (() => void) | undefined;
  emit(event: ModelEvent): boolean;
}

/** How an adapter turns what its SDK threw into a `ModelCallError` (`streamStarted`: an event had been read). */
export type CallErrorMapper = (error: unknown, info: { readonly streamStarted: boolean }) => Error;

/**
 * One subscription of an SDK-backed call, as one object: the {@link BridgeContext} its body sees, its OWN
 * `AbortController`, and the teardown its subscriber calls (`unsubscribe`). {@link sdkBridge} runs a body
 * function with it; an adapter with more per-request state (the OpenAI stream reader) extends it and calls
 * {@link respond} / {@link fail} itself.
 */
export class BridgeCall implements BridgeContext, Unsubscribable {
  closed = false;
  started = false;
  release: (() => void) | undefined = undefined;
  #succeeded = false;
  readonly #controller = new AbortController();

  /**
   * @param subscriber the subscription's subscriber.
   * @param toError maps what the SDK threw (see {@link fail}).
   */
  constructor(
    protected readonly subscriber: Subscriber<ModelEvent>,
    private readonly toError: CallErrorMapper,
  ) {}

  /** The signal of the call's own controller, aborted on unsubscribe before success. */
  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  /** Emits a delta unless closed. @returns false once closed. */
  emit(event: ModelEvent): boolean {
    if (!this.closed) this.subscriber.next(event);
    return !this.closed;
  }

  /** Emits `response` as the one `response` event, then completes (nothing once closed; `undefined`: nothing). */
  respond(response: ModelResponse | undefined): void {
    if (this.closed || !response) return;
    this.#succeeded = true;
    this.subscriber.next({ type: 'response', response });
    this.subscriber.complete();
  }

  /**
   * Errors with a `ModelOutputError` as it is (output of the wrong shape is not a transport fault) or with
   * `toError(error)`. Nothing once closed: our own abort (unsubscribe) never surfaces.
   */
  fail(error: unknown): void {
    if (this.closed) return;
    this.subscriber.error(
      error instanceof ModelOutputError ? error : this.toError(error, { streamStarted: this.started }),
    );
  }

  /** The teardown: closes, aborts the controller unless the call succeeded, and calls `release` once. */
  unsubscribe(): void {
    this.closed = true;
    if (!this.#succeeded) this.#controller.abort();
    const release = this.release;
    this.release = undefined;
    release?.();
  }
}

/**
 * The cold Observable every SDK-backed provider's `call()` is built on, one rule in one place: each
 * subscription makes its OWN `AbortController` and runs `body(ctx, signal)` a microtask later (nothing is sent
 * for a subscription closed at once); `body` emits deltas through `ctx.emit` and resolves with the response,
 * which is emitted as the one `response` event before completion (`undefined`: closed, nothing more).
 * Unsubscribing before success aborts the controller (undici destroys the socket before `unsubscribe` returns)
 * and calls `ctx.release`; our own abort never surfaces as an error. A failure errors with a
 * `ModelOutputError` as it is (output of the wrong shape is not a transport fault) or with `toError(error)`.
 * The subscription's state is one {@link BridgeCall}.
 */
export function sdkBridge(
  body: (ctx: BridgeContext, signal: AbortSignal) => Promise<ModelResponse | undefined>,
  toError: CallErrorMapper,
): Observable<ModelEvent> {
  return new Observable<ModelEvent>((subscriber) => {
    const call = new BridgeCall(subscriber, toError);
    void Promise.resolve(call)
      .then((ctx) => (ctx.closed ? undefined : body(ctx, ctx.signal)))
      .then(
        (response) => call.respond(response),
        (error: unknown) => call.fail(error),
      );
    return call;
  });
}

/** `ctx.release` for an SDK's async iterator: calls its `return()`, ignoring what that rejects with. */
export function releaseIterator(iterator: AsyncIterator<unknown>): () => void {
  return () => void iterator.return?.()?.catch(() => undefined);
}
