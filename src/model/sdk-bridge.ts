import { Observable } from 'rxjs';
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
 * The cold Observable every SDK-backed provider's `call()` is built on, one rule in one place: each
 * subscription makes its OWN `AbortController` and runs `body(ctx, signal)` a microtask later (nothing is sent
 * for a subscription closed at once); `body` emits deltas through `ctx.emit` and resolves with the response,
 * which is emitted as the one `response` event before completion (`undefined`: closed, nothing more).
 * Unsubscribing before success aborts the controller (undici destroys the socket before `unsubscribe` returns)
 * and calls `ctx.release`; our own abort never surfaces as an error. A failure errors with a
 * `ModelOutputError` as it is (output of the wrong shape is not a transport fault) or with `toError(error)`.
 */
export function sdkBridge(
  body: (ctx: BridgeContext, signal: AbortSignal) => Promise<ModelResponse | undefined>,
  toError: CallErrorMapper,
): Observable<ModelEvent> {
  return new Observable<ModelEvent>((subscriber) => {
    const controller = new AbortController();
    let succeeded = false;
    const ctx: BridgeContext = {
      closed: false,
      started: false,
      release: undefined,
      emit(event) {
        if (!ctx.closed) subscriber.next(event);
        return !ctx.closed;
      },
    };
    Promise.resolve()
      .then(() => (ctx.closed ? undefined : body(ctx, controller.signal)))
      .then(
        (response) => {
          if (ctx.closed || !response) return;
          succeeded = true;
          subscriber.next({ type: 'response', response });
          subscriber.complete();
        },
        (error: unknown) => {
          if (ctx.closed) return; // our own abort (unsubscribe) never surfaces
          subscriber.error(error instanceof ModelOutputError ? error : toError(error, { streamStarted: ctx.started }));
        },
      );
    return () => {
      ctx.closed = true;
      if (!succeeded) controller.abort();
      const release = ctx.release;
      ctx.release = undefined;
      release?.();
    };
  });
}

/** `ctx.release` for an SDK's async iterator: calls its `return()`, ignoring what that rejects with. */
export function releaseIterator(iterator: AsyncIterator<unknown>): () => void {
  return () => void iterator.return?.()?.catch(() => undefined);
}
