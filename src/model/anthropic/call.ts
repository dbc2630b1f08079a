import type { Observable } from 'rxjs';
import { APIError } from '@anthropic-ai/sdk';
import { ModelCallError, ModelOutputError } from '../../errors.js';
import { isConnectionFailure } from '../openai/errors.js';
import { isEventStream, wholeBodyResponse, type JsonAnswer } from '../openai/whole-body.js';
import { releaseIterator, sdkBridge, type BridgeContext } from '../sdk-bridge.js';
import type { ModelEvent, ModelResponse } from '../types.js';
import { toAnthropicCallError } from './errors.js';
import { messageToResponse } from './response.js';
import { AnthropicStreamAccumulator } from './stream.js';

/** Per-request options passed to every SDK call (the SDK never retries, never times out first). */
export interface SdkRequestOptions {
  readonly signal: AbortSignal;
  readonly maxRetries: 0;
  readonly timeout: number;
}

/** A streaming SDK call as loopctl uses it: the SDK's `APIPromise` of its `Stream`, read with `withResponse()`. */
export interface StreamingSdkCall {
  withResponse(): Promise<{ readonly data: AsyncIterable<unknown>; readonly response: Response }>;
}

/** A complete Message sent where a stream was asked for (servers that ignore `stream: true`). */
const MESSAGE_BODY: JsonAnswer = {
  expected: 'a message',
  read(body) {
    if (typeof body !== 'object' || body === null) return undefined;
    const loose = body as { type?: unknown; content?: unknown; error?: unknown };
    if (loose.type === 'error' && typeof loose.error === 'object' && loose.error !== null) {
      throw new APIError(undefined, body, undefined, undefined);
    }
    return loose.type === 'message' && Array.isArray(loose.content) ? messageToResponse(body) : undefined;
  },
};

/**
 * A cold Observable over one streamed Messages call. Each subscription makes its OWN `AbortController`, calls
 * `send({ signal, maxRetries: 0, timeout })`, reads the SDK stream through an {@link AnthropicStreamAccumulator},
 * emits its deltas, then one `response`, then completes. Unsubscribing aborts the controller (the socket closes) and
 * returns the iterator; nothing is emitted after it and the abort is swallowed. Failures error with a
 * `ModelCallError` ({@link toAnthropicCallError}; `streamStarted` true once an event was read) or a
 * `ModelOutputError` for an event of the wrong shape. A 200 that is not `text/event-stream` is read as a whole
 * Message, or fails `not_event_stream`. A connection lost after the `stop_reason` arrived ends the stream with the
 * answer.
 */
export function streamMessages(timeout: number, send: (options: SdkRequestOptions) => StreamingSdkCall) {
  return bridge(timeout, async (ctx, options) => {
    const { data, response } = await send(options).withResponse();
    const contentType = response.headers.get('content-type');
    if (contentType !== null && !isEventStream(contentType))
      return wholeBodyResponse(response, contentType, MESSAGE_BODY);
    const iterator = data[Symbol.asyncIterator]();
    if (ctx.closed) {
      void iterator.return?.()?.catch(() => undefined);
      return undefined;
    }
    ctx.release = releaseIterator(iterator);
    const state = new AnthropicStreamAccumulator();
    for (;;) {
      let next: IteratorResult<unknown>;
      try {
        next = await iterator.next();
      } catch (err) {
        if (!ctx.closed && state.complete() && isConnectionFailure(err)) break;
        throw err;
      }
      if (ctx.closed) return undefined;
      if (next.done) break;
      const events = read(() => state.push(next.value), 'malformed_chunk');
      ctx.started = true;
      for (const event of events) if (!ctx.emit(event)) return undefined;
    }
    return read(() => state.finish(), 'malformed_chunk');
  });
}

/**
 * A cold Observable over one non-streamed Messages call: one `response` (no deltas), then completion; unsubscribing
 * aborts the request (the socket closes). Errors as {@link streamMessages}.
 */
export function singleMessage(timeout: number, send: (options: SdkRequestOptions) => PromiseLike<unknown>) {
  return bridge(timeout, async (ctx, options) => {
    const body = await send(options);
    return ctx.closed ? undefined : read(() => messageToResponse(body), 'malformed_response');
  });
}

/** Runs a reading step: its typed errors pass; anything else becomes a `ModelOutputError` with it as `cause`. */
function read<T>(step: () => T, code: 'malformed_chunk' | 'malformed_response'): T {
  try {
    return step();
  } catch (err) {
    if (err instanceof ModelOutputError || err instanceof ModelCallError || err instanceof APIError) throw err;
    const what = code === 'malformed_chunk' ? 'a stream event' : 'the response';
    throw new ModelOutputError(`${what} could not be read`, { code, cause: err });
  }
}

/** {@link sdkBridge} with the Anthropic SDK's per-request options and error classification. */
function bridge(
  timeout: number,
  body: (ctx: BridgeContext, options: SdkRequestOptions) => Promise<ModelResponse | undefined>,
): Observable<ModelEvent> {
  return sdkBridge((ctx, signal) => body(ctx, { signal, maxRetries: 0, timeout }), toAnthropicCallError);
}
