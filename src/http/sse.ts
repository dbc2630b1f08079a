import type { ServerResponse } from 'node:http';
import { EventEncoder } from '@ag-ui/encoder';
import type { AgUiFrame } from '../ag-ui/frames.js';

/** Headers of every event stream; `X-Accel-Buffering` keeps a proxy from holding the stream back. */
const SSE_HEADERS = {
  'Content-Type': 'text/event-stream; charset=utf-8',
  'Cache-Control': 'no-cache, no-transform',
  'X-Accel-Buffering': 'no',
} as const;

const encoder = new EventEncoder();

/**
 * One AG-UI frame as SSE text: an `id:` line (the frame id, for `Last-Event-ID`), then the event as
 * @ag-ui/encoder writes it (`data: <JSON>` and a blank line).
 */
export function encodeFrame(frame: AgUiFrame): string {
  return `id: ${frame.id}\n${encoder.encodeSSE(frame.event)}`;
}

/**
 * One SSE response carrying AG-UI frames, encoded by @ag-ui/encoder with an `id:` line each (the frame id,
 * for `Last-Event-ID`). Headers go out with the first frame, so an error before it can still be a JSON
 * answer. A slow reader: when more than `maxBufferedBytes` wait in the response's buffer as the next frame
 * comes (once armed: after the replay), the connection is closed, and the client resumes with the last id
 * it received.
 */
export class SseWriter {
  #overflowed = false;
  #armed = false;

  constructor(
    private readonly res: ServerResponse,
    private readonly maxBufferedBytes: number,
    private readonly extraHeaders: Readonly<Record<string, string>> = {},
  ) {}

  /** True once headers were sent (an error can then only close the stream). */
  get started(): boolean {
    return this.res.headersSent;
  }

  /**
   * From now on the limit applies. Until then (the replay a subscription delivers at once, bounded by what
   * the run itself holds) frames are written whatever waits: a reader cannot be slow at something it has
   * not been given time to read.
   */
  arm(): void {
    this.#armed = true;
  }

  /** True when the connection was closed for a full buffer. */
  get overflowed(): boolean {
    return this.#overflowed;
  }

  /**
   * Writes one frame; false (and the connection closed) when the reader is too slow: more than
   * `maxBufferedBytes` still wait from earlier frames. (Checked before writing, so one frame larger than
   * the limit still goes out to a reader that keeps up.)
   */
  write(frame: AgUiFrame): boolean {
    return this.writeEncoded(encodeFrame(frame));
  }

  /**
   * Writes one frame already encoded by {@link encodeFrame} (one encoding shared by every reader of a run);
   * false as {@link write}. Node's http corks the socket at the first write of a tick and uncorks it on the
   * next, so the frames written in one tick leave in one socket write.
   */
  writeEncoded(text: string): boolean {
    if (this.#overflowed || this.res.destroyed) return false;
    if (this.#armed && this.res.writableLength > this.maxBufferedBytes) {
      this.#overflowed = true;
      this.res.destroy();
      return false;
    }
    if (!this.res.headersSent) this.res.writeHead(200, { ...SSE_HEADERS, ...this.extraHeaders });
    this.res.write(text);
    return true;
  }

  /**
   * Sends the headers now, with `headers` added, and `comment` as an SSE comment line (which readers skip):
   * for a run that has no event to send yet (`Loopctl-Run-State: waiting`), so its reader knows it at once.
   */
  open(headers: Readonly<Record<string, string>>, comment: string): void {
    if (this.res.headersSent || this.res.destroyed) return;
    this.res.writeHead(200, { ...SSE_HEADERS, ...this.extraHeaders, ...headers });
    this.res.write(`: ${comment.replace(/[\r\n]+/g, ' ')}\n\n`);
  }

  /** Ends the stream (headers first, for a stream that had nothing to send). */
  end(): void {
    if (this.res.destroyed || this.res.writableEnded) return;
    if (!this.res.headersSent) this.res.writeHead(200, { ...SSE_HEADERS, ...this.extraHeaders });
    this.res.end();
  }
}
