import type { runHttpRequest } from '@ag-ui/client';
import type { AGUIEvent } from '@ag-ui/core';
import { EventSchema } from '@ag-ui/core/schemas';
import { Observable, type ObservedValueOf, type OperatorFunction } from 'rxjs';

/** The end of an SSE event block (a line break, then an empty line); any of the three line endings. */
const BLANK_LINE = /\r\n\r\n|\n\n|\r\r/;

/** What `@ag-ui/client`'s `runHttpRequest` emits: the response headers, then the body's bytes. */
export type HttpEvent = ObservedValueOf<ReturnType<typeof runHttpRequest>>;

/** One AG-UI event of a run's stream with its SSE `id:` (the frame id loopctl/http gives it, for `Last-Event-ID`). */
export interface Frame {
  readonly id: string;
  readonly event: AGUIEvent;
}

/**
 * What a run's event stream carries: the run id (header `Loopctl-Run-Id`, first), `waiting` when the run waits
 * for a worker (header `Loopctl-Run-State: waiting`: a queued run, which has no frame yet), then its frames.
 */
export type StreamItem =
  | { readonly kind: 'run'; readonly runId: string }
  | { readonly kind: 'waiting' }
  | ({ readonly kind: 'frame' } & Frame);

/** A stream the page cannot read: not SSE, a frame without an id, or an event that is not AG-UI. */
export class StreamError extends Error {
  override readonly name = 'StreamError';
}

/**
 * Reads the SSE body of a loopctl/http event stream into frames. `@ag-ui/client`'s own SSE parser drops the
 * `id:` lines, and the page needs them: the id of the last frame it applied is what it re-attaches with after
 * a reload or a closed connection (no duplicate, no gap). Each event is validated with `@ag-ui/core`'s own
 * schema; a frame that fails it errors the stream with a {@link StreamError}.
 */
export function sseFrames(): OperatorFunction<HttpEvent, StreamItem> {
  return (source) =>
    new Observable<StreamItem>((subscriber) => {
      const decoder = new TextDecoder();
      let buffer = '';
      const block = (text: string): void => {
        let id: string | undefined;
        const data: string[] = [];
        for (const line of text.split(/\r\n|\r|\n/)) {
          const colon = line.indexOf(':');
          if (colon === 0) continue; // a comment
          const field = colon < 0 ? line : line.slice(0, colon);
          const value = colon < 0 ? '' : line.slice(colon + (line[colon + 1] === ' ' ? 2 : 1));
          if (field === 'id') id = value;
          else if (field === 'data') data.push(value);
        }
        if (data.length === 0) return;
        if (id === undefined) throw new StreamError('an event came without an id');
        const parsed = EventSchema.safeParse(JSON.parse(data.join('\n')));
        if (!parsed.success) throw new StreamError(`event ${id} is not an AG-UI event: ${parsed.error.message}`);
        subscriber.next({ kind: 'frame', id, event: parsed.data as AGUIEvent });
      };
      return source.subscribe({
        next(event) {
          try {
            if (event.type === 'headers') {
              const type = event.headers.get('Content-Type') ?? '';
              if (!type.startsWith('text/event-stream')) throw new StreamError(`not an event stream (${type})`);
              const runId = event.headers.get('Loopctl-Run-Id');
              if (runId) subscriber.next({ kind: 'run', runId: decodeURIComponent(runId) });
              if (event.headers.get('Loopctl-Run-State') === 'waiting') subscriber.next({ kind: 'waiting' });
              return;
            }
            buffer += decoder.decode(event.data, { stream: true });
            let end: RegExpExecArray | null;
            while ((end = BLANK_LINE.exec(buffer)) !== null) {
              const text = buffer.slice(0, end.index);
              buffer = buffer.slice(end.index + end[0].length);
              block(text);
            }
          } catch (error) {
            subscriber.error(error);
          }
        },
        error: (error: unknown) => subscriber.error(error),
        // An unfinished frame at the end was cut off with its connection: it is not applied, and the page
        // re-attaches after the last whole frame.
        complete: () => subscriber.complete(),
      });
    });
}
