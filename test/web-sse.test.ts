/**
 * The web app's SSE reader (src/web/sse.ts): the frames of a loopctl/http stream with their ids, whatever the
 * chunking of the body; the run id from the header; an event that is not AG-UI, a frame without an id, or a
 * body that is not an event stream is a StreamError.
 */
import { Observable, lastValueFrom, toArray } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { sseFrames, StreamError, type HttpEvent, type StreamItem } from '../src/web/sse.js';

const headers = (type = 'text/event-stream; charset=utf-8', runId?: string): HttpEvent =>
  ({
    type: 'headers',
    status: 200,
    headers: new Headers({ 'Content-Type': type, ...(runId ? { 'Loopctl-Run-Id': encodeURIComponent(runId) } : {}) }),
  }) as HttpEvent;
const data = (bytes: Uint8Array): HttpEvent => ({ type: 'data', data: bytes }) as HttpEvent;

const read = (events: HttpEvent[]): Promise<StreamItem[]> =>
  lastValueFrom(
    new Observable<HttpEvent>((s) => {
      events.forEach((e) => s.next(e));
      s.complete();
    }).pipe(sseFrames(), toArray()),
  );

const BODY =
  'id: 0\ndata: {"type":"RUN_STARTED","threadId":"t","runId":"r 1"}\n\n' +
  ': a comment\n\n' +
  'id: 3:0\ndata: {"type":"TEXT_MESSAGE_START","messageId":"m","role":"assistant"}\n\n' +
  'id: 3\r\ndata: {"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"h\u00e9 \u2014 \ud83d\ude00"}\r\n\r\n';

const EXPECTED: StreamItem[] = [
  { kind: 'run', runId: 'r 1' },
  { kind: 'frame', id: '0', event: { type: 'RUN_STARTED', threadId: 't', runId: 'r 1' } as never },
  { kind: 'frame', id: '3:0', event: { type: 'TEXT_MESSAGE_START', messageId: 'm', role: 'assistant' } as never },
  { kind: 'frame', id: '3', event: { type: 'TEXT_MESSAGE_CONTENT', messageId: 'm', delta: 'hé — 😀' } as never },
];

describe('web app: SSE frames with their ids', () => {
  it('the same frames whatever the body is cut into (every split point of the bytes)', async () => {
    const bytes = new TextEncoder().encode(BODY);
    for (let cut = 0; cut <= bytes.length; cut++) {
      const items = await read([headers(undefined, 'r 1'), data(bytes.slice(0, cut)), data(bytes.slice(cut))]);
      expect(items).toEqual(EXPECTED);
    }
  });

  it('a frame cut off by the end of the body is not applied (the page re-attaches after it)', async () => {
    const items = await read([headers(), data(new TextEncoder().encode(`${BODY}id: 4\ndata: {"type":"TEXT_MES`))]);
    expect(items.map((i) => (i.kind === 'frame' ? i.id : i.kind))).toEqual(['0', '3:0', '3']);
  });

  it('refuses a frame without an id, an event that is not AG-UI, a body that is not SSE', async () => {
    const enc = (text: string) => data(new TextEncoder().encode(text));
    await expect(read([headers(), enc('data: {"type":"RUN_STARTED","threadId":"t","runId":"r"}\n\n')])).rejects.toThrow(
      new StreamError('an event came without an id'),
    );
    await expect(read([headers(), enc('id: 1\ndata: {"type":"NOT_AN_EVENT"}\n\n')])).rejects.toThrow(
      /^event 1 is not an AG-UI event/,
    );
    await expect(read([headers('application/json')])).rejects.toThrow(
      new StreamError('not an event stream (application/json)'),
    );
  });
});
