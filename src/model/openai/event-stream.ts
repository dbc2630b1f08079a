import { createParser } from 'eventsource-parser';
import { APIError } from 'openai';

/** How {@link readEventStream} ended when it did not throw. */
export type EventStreamEnd =
  /** The body ended (after `data: [DONE]` or not): every complete event in it was handed over. */
  | { readonly end: 'ended' }
  /** `onChunk` returned false (the consumer left); the body was cancelled. */
  | { readonly end: 'stopped' }
  /**
   * Reading the body failed (`error`: the fetch body's error, e.g. undici's `TypeError: terminated` when the
   * connection is cut, or an `AbortError` once the request is aborted). The events read before it were handed over.
   */
  | { readonly end: 'cut'; readonly error: unknown };

const STREAM: TextDecodeOptions = { stream: true };
const ignore = (): undefined => undefined;

/**
 * Reads an OpenAI event stream (`text/event-stream` body of a streamed Chat Completions or Responses request) with
 * `eventsource-parser`, in place of the SDK's own reader: each read of the body is decoded (UTF-8; a code point split
 * across reads is carried over) and fed to the parser in one call, and every complete event of that read is handed to
 * `onChunk` synchronously, in wire order, before the next read. One read of many events costs one `await`.
 *
 * Per event, as the `openai` SDK's `Stream` does (6.x, `fromSSEResponse`): the `data` is parsed as JSON and handed over
 * whatever its `event:` name; `data: [DONE]` ends the content, and the events after it are ignored (the body is still
 * read to its end so the connection can be reused); a payload holding a truthy `error` throws an `APIError` without
 * status (`error` as its body, `headers` as its headers). Events without data and comments are skipped; an event cut
 * off by the end of the body (no blank line after it) is dropped.
 *
 * A malformed event after good ones in the same read: the good ones are handed over first, then it throws.
 *
 * @param reader a reader of the response body (`body.getReader()`); cancelled on return unless the body ended or
 *   failed. Cancelling it from outside while a read is pending ends the stream as `ended`.
 * @param headers the response headers, for the `APIError` of an in-stream error.
 * @param onChunk called with each parsed payload; returns false to stop reading.
 * @returns how it ended ({@link EventStreamEnd}; a read error is returned, not thrown).
 * @throws SyntaxError when a `data` payload is not JSON; `APIError` for a payload with an `error`; whatever
 *   `onChunk` throws. No later event is handed over after a throw.
 */
export async function readEventStream<C>(
  reader: ReadableStreamDefaultReader<Uint8Array>,
  headers: Headers,
  onChunk: (chunk: C) => boolean,
): Promise<EventStreamEnd> {
  const decoder = new TextDecoder();
  let done = false; // `data: [DONE]` seen
  let stopped = false;
  const parser = createParser({
    onEvent(message) {
      if (done || stopped) return;
      const data = message.data;
      if (data.startsWith('[DONE]')) {
        done = true;
        return;
      }
      const chunk = JSON.parse(data) as C & { error?: unknown };
      if (chunk && chunk.error) throw new APIError(undefined, chunk.error as object, undefined, headers);
      if (!onChunk(chunk)) stopped = true;
    },
  });
  let settled = false; // the body ended or failed: nothing to cancel
  try {
    for (;;) {
      let read: ReadableStreamReadResult<Uint8Array>;
      try {
        read = await reader.read();
      } catch (error) {
        settled = true;
        return { end: 'cut', error };
      }
      if (read.done) break;
      parser.feed(decoder.decode(read.value, STREAM));
      if (stopped) return { end: 'stopped' };
    }
    settled = true;
    const rest = decoder.decode();
    if (rest !== '') parser.feed(rest);
    return stopped ? { end: 'stopped' } : { end: 'ended' };
  } finally {
    if (!settled) reader.cancel().catch(ignore);
  }
}
