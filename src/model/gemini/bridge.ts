import type { Observable } from 'rxjs';
import { ModelCallError, ModelOutputError } from '../../errors.js';
import { releaseIterator, sdkBridge } from '../sdk-bridge.js';
import type { ModelEvent } from '../types.js';
import { toGeminiCallError } from './errors.js';
import { GeminiResponseReader } from './response-reader.js';

/**
 * A cold Observable over one streamed `generateContentStream` call. Each subscription makes its OWN
 * `AbortController`, calls `send(signal)`, reads the SDK's async generator chunk by chunk, emits the reader's deltas,
 * then one `response`, then completes. Unsubscribing aborts the controller (undici destroys the socket at once,
 * before `unsubscribe` returns) and calls the generator's `return()`; nothing is emitted after it and the abort error
 * is swallowed. Failures error with `ModelCallError` (`streamStarted` once a chunk was read) or, for a chunk of the
 * wrong shape, `ModelOutputError` (`malformed_chunk`, naming the field). A connection lost after the answer was
 * complete (a `finishReason` arrived) ends it with the response.
 */
export function streamCall(send: (signal: AbortSignal) => Promise<AsyncIterable<unknown>>): Observable<ModelEvent> {
  return sdkBridge(async (ctx, signal) => {
    const stream = await send(signal);
    const iterator = stream[Symbol.asyncIterator]();
    if (ctx.closed) {
      void iterator.return?.()?.catch(() => undefined);
      return undefined;
    }
    ctx.release = releaseIterator(iterator);
    const reader = new GeminiResponseReader('malformed_chunk');
    for (;;) {
      let next: IteratorResult<unknown>;
      try {
        next = await iterator.next();
      } catch (err) {
        if (!ctx.closed && reader.complete() && toGeminiCallError(err, { streamStarted: true }).retryable) break;
        throw err;
      }
      if (ctx.closed) return undefined;
      if (next.done) break;
      const events = read(() => reader.push(next.value), 'malformed_chunk');
      ctx.started = true;
      for (const event of events) if (!ctx.emit(event)) return undefined;
    }
    return read(() => reader.finish(), 'malformed_chunk');
  }, toGeminiCallError);
}

/**
 * A cold Observable over one `generateContent` call: sends it with its own `AbortController`, emits one `response`
 * (no deltas) and completes. Unsubscribing aborts the request (the socket closes). Errors as {@link streamCall}
 * (`malformed_response` for a body of the wrong shape).
 */
export function singleCall(send: (signal: AbortSignal) => Promise<unknown>): Observable<ModelEvent> {
  return sdkBridge(async (ctx, signal) => {
    const body = await send(signal);
    if (ctx.closed) return undefined;
    return read(() => {
      const reader = new GeminiResponseReader('malformed_response');
      reader.push(body);
      return reader.finish();
    }, 'malformed_response');
  }, toGeminiCallError);
}

/** Runs a reader step: typed errors pass; anything else becomes a `ModelOutputError` with it as `cause`. */
function read<T>(step: () => T, code: 'malformed_chunk' | 'malformed_response'): T {
  try {
    return step();
  } catch (err) {
    if (err instanceof ModelOutputError || err instanceof ModelCallError) throw err;
    const what = code === 'malformed_chunk' ? 'a stream chunk' : 'the response';
    throw new ModelOutputError(`${what} could not be read`, { code, cause: err });
  }
}
