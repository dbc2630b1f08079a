import { createParser, type EventSourceParser } from 'eventsource-parser';
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

/** Where an {@link EventStreamReader} hands each parsed payload; returns false to stop reading. */
export interface ChunkSink<C> {
  chunk(chunk: C): boolean;
}

const ENDED: EventStreamEnd = { end: 'ended' };
const STOPPED: EventStreamEnd = { end: 'stopped' };
const BOM = 0xfeff;
const CR = 0x0d;
const STREAM: TextDecodeOptions = { stream: true };
/**
 * Decodes the reads that end on a whole code point (a decoder keeps no state between calls without `stream`). The BOM
 * is dropped by {@link EventStreamReader} itself, at the start of the body only.
 */
const WHOLE = new TextDecoder('utf-8', { ignoreBOM: true });
const ignore = (): undefined => undefined;

/**
 * The state of reading one OpenAI event stream (`text/event-stream` body of a streamed Chat Completions or Responses
 * request), in place of the SDK's own reader, as one object: `eventsource-parser`'s parser (made at the first text),
 * and a UTF-8 decoder made only once a read ends inside a code point (until then each read is decoded whole by a
 * shared decoder). {@link read} drives it: each read of the body is decoded and parsed in one call, and every complete
 * event of that read is handed to `sink.chunk` synchronously, in wire order, before the next read. One read of many
 * events costs one `await`.
 *
 * The lines, fields and events are `eventsource-parser`'s (lines end with LF, CR or CRLF; `data` lines of one event
 * are joined with LF; a CR that ends the body ends its line); a leading BOM is dropped. Per event, as the `openai`
 * SDK's `Stream` does (6.x, `fromSSEResponse`): the `data` is parsed as JSON and handed over whatever its `event:`
 * name; `data: [DONE]` ends the content, and the events after it are ignored (the body is still read to its end so
 * the connection can be reused); a payload holding a truthy `error` throws an `APIError` without status (`error` as its
 * body, `headers` as its headers). Events without data are skipped; an event cut off by the end of the body (no blank
 * line after it) is dropped.
 *
 * A malformed event after good ones in the same read: the good ones are handed over first, then it throws.
 */
export class EventStreamReader<C> {
  /** The parser of the event stream, made at the first text ({@link #feed}). */
  #parser: EventSourceParser | undefined;
  #first = true;
  /** `data: [DONE]` seen, or the sink returned false: later events are not handed over. */
  #done = false;
  #stopped = false;
  /** The text so far ends with a CR: a line end, unless an LF follows (the parser waits for the next text to see). */
  #cr = false;
  #decoder: TextDecoder | undefined;

  /**
   * @param sink receives each parsed payload.
   * @param headers the response headers, for the `APIError` of an in-stream error.
   */
  constructor(
    private readonly sink: ChunkSink<C>,
    private readonly headers: Headers,
  ) {}

  /**
   * Reads `reader` to its end. @returns how it ended ({@link EventStreamEnd}; a read error is returned, not thrown).
   * The reader is cancelled on return unless the body ended or failed; cancelling it from outside while a read is
   * pending ends the stream as `ended`.
   * @throws SyntaxError when a `data` payload is not JSON; `APIError` for a payload with an `error`; whatever
   *   `sink.chunk` throws. No later event is handed over after a throw.
   */
  async read(reader: ReadableStreamDefaultReader<Uint8Array>): Promise<EventStreamEnd> {
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
        if (!this.push(read.value)) return STOPPED;
      }
      settled = true;
      return this.end() ? ENDED : STOPPED;
    } finally {
      if (!settled) reader.cancel().catch(ignore);
    }
  }

  /**
   * Parses one read of the body, handing over every event it completes. @returns false once the sink stopped (read
   * no more). @throws as {@link read}.
   */
  push(bytes: Uint8Array): boolean {
    this.#feed(this.#decode(bytes));
    return !this.#stopped;
  }

  /**
   * The body ended: parses what the decoder still held, and ends a last line whose CR the parser held back (no LF can
   * follow it now), so an event whose blank line is the body's last CR is handed over, as the SDK hands it over.
   * @returns false when the sink stopped. @throws as {@link read}.
   */
  end(): boolean {
    const rest = this.#decoder?.decode() ?? '';
    if (rest !== '') this.#feed(rest);
    if (this.#cr) this.#feed('\n'); // CR LF is one line end: the held-back CR ends its line, nothing more
    return !this.#stopped;
  }

  /** The text of one read; a code point cut at its end is carried over to the next (by a decoder made for it). */
  #decode(bytes: Uint8Array): string {
    if (this.#decoder === undefined) {
      if (!endsInsideCodePoint(bytes)) return WHOLE.decode(bytes);
      this.#decoder = new TextDecoder('utf-8', { ignoreBOM: true });
    }
    return this.#decoder.decode(bytes, STREAM);
  }

  /**
   * Hands the text of one read to the event stream's parser (`eventsource-parser`), made at the first text: a request
   * that has received nothing holds none of its state.
   */
  #feed(text: string): void {
    if (this.#first && text !== '') {
      this.#first = false;
      if (text.charCodeAt(0) === BOM) text = text.slice(1);
    }
    if (text !== '') this.#cr = text.charCodeAt(text.length - 1) === CR;
    (this.#parser ??= createParser({ onEvent: (message) => this.#event(message.data) })).feed(text);
  }

  /** One event's `data`. */
  #event(data: string): void {
    if (this.#done || this.#stopped) return;
    if (data.startsWith('[DONE]')) {
      this.#done = true;
      return;
    }
    const chunk = JSON.parse(data) as C & { error?: unknown };
    if (chunk && chunk.error) throw new APIError(undefined, chunk.error as object, undefined, this.headers);
    if (!this.sink.chunk(chunk)) this.#stopped = true;
  }
}

/** True when `bytes` ends with the start of a UTF-8 sequence whose remaining bytes are in the next read. */
function endsInsideCodePoint(bytes: Uint8Array): boolean {
  const n = bytes.length;
  for (let back = 1; back <= 4 && back <= n; back++) {
    const b = bytes[n - back]!;
    if ((b & 0xc0) === 0x80) continue; // a continuation byte: look further back
    const need = b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : b >= 0xc0 ? 2 : 1;
    return need > back;
  }
  return false;
}

/**
 * Reads an OpenAI event stream with an {@link EventStreamReader}, handing each payload to `onChunk` (see there for
 * the rules).
 *
 * @param reader a reader of the response body (`body.getReader()`); cancelled on return unless the body ended or
 *   failed. Cancelling it from outside while a read is pending ends the stream as `ended`.
 * @param headers the response headers, for the `APIError` of an in-stream error.
 * @param onChunk called with each parsed payload; returns false to stop reading.
 * @returns how it ended ({@link EventStreamEnd}; a read error is returned, not thrown).
 * @throws SyntaxError when a `data` payload is not JSON; `APIError` for a payload with an `error`; whatever
 *   `onChunk` throws. No later event is handed over after a throw.
 */
export function readEventStream<C>(
  reader: ReadableStreamDefaultReader<Uint8Array>,
  headers: Headers,
  onChunk: (chunk: C) => boolean,
): Promise<EventStreamEnd> {
  return new EventStreamReader<C>({ chunk: onChunk }, headers).read(reader);
}
