/**
 * The OpenAI adapters read a streamed body themselves (`readEventStream`, eventsource-parser): every event of one
 * read of the body is handed over synchronously, in wire order, before the next read is asked for; a malformed
 * event after good ones in the same read still delivers the good ones first, and nothing after it. The reader
 * is driven by a pull-based ReadableStream, so "one read" is exact here, not a guess about TCP segments.
 */
import { APIError } from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ModelCallError, ModelOutputError } from '../src/errors.js';
import { readEventStream, type EventStreamEnd } from '../src/model/openai/event-stream.js';
import { openaiChat, openaiResponses } from '../src/model/openai/index.js';
import type { ModelEvent, ModelRequest } from '../src/model/types.js';
import {
  SSE_DONE,
  chatChunk,
  collect,
  sseData,
  startOpenAIServer,
  type OpenAIServer,
} from './support/openai-server.js';

const encoder = new TextEncoder();
const frame = (payload: unknown) => sseData(payload);
const event = (type: string, body: Record<string, unknown>) =>
  `event: ${type}\ndata: ${JSON.stringify({ type, ...body })}\n\n`;

/**
 * A body that answers each read with the next of `reads` (bytes, or an Error to fail the read), and records, at
 * each read asked for, how many chunks the consumer had been handed by then.
 */
function body(reads: readonly (string | Uint8Array | Error)[]) {
  const handed: unknown[] = [];
  const seenAtRead: number[] = [];
  let cancelled = false;
  let i = 0;
  const stream = new ReadableStream<Uint8Array>(
    {
      pull(controller) {
        seenAtRead.push(handed.length);
        const next = reads[i++];
        if (next === undefined) return controller.close();
        if (next instanceof Error) return controller.error(next);
        controller.enqueue(typeof next === 'string' ? encoder.encode(next) : next);
      },
      cancel() {
        cancelled = true;
      },
    },
    { highWaterMark: 0 }, // no read ahead: pull runs only when the reader asks
  );
  return {
    handed,
    seenAtRead,
    cancelled: () => cancelled,
    read: (onChunk: (chunk: unknown) => boolean = () => true): Promise<EventStreamEnd> =>
      readEventStream<unknown>(stream.getReader(), new Headers({ 'x-request-id': 'req_1' }), (chunk) => {
        handed.push(chunk);
        return onChunk(chunk);
      }),
  };
}

/** What each fault case checked, printed once at the end. */
const checked: string[] = [];
afterAll(() =>
  console.info(`readEventStream / adapters: ${checked.length} fault cases checked:\n  ${checked.join('\n  ')}`),
);

describe('readEventStream: one read, many events', () => {
  it('hands over every event of a read before it asks for the next read', async () => {
    const b = body([frame({ n: 1 }) + frame({ n: 2 }) + frame({ n: 3 }), frame({ n: 4 }) + SSE_DONE]);
    expect(await b.read()).toEqual({ end: 'ended' });
    expect(b.handed).toEqual([{ n: 1 }, { n: 2 }, { n: 3 }, { n: 4 }]);
    // read 1 asked with 0 handed, read 2 after all three of read 1, read 3 (the end) after the fourth
    expect(b.seenAtRead).toEqual([0, 3, 4]);
  });

  it('a malformed frame after good ones in the same read: the good ones first, then SyntaxError, then nothing', async () => {
    const b = body([frame({ n: 1 }) + frame({ n: 2 }) + 'data: {not json\n\n' + frame({ n: 3 }), frame({ n: 4 })]);
    await expect(b.read()).rejects.toBeInstanceOf(SyntaxError);
    expect(b.handed).toEqual([{ n: 1 }, { n: 2 }]);
    expect(b.seenAtRead).toEqual([0]); // no second read
    expect(b.cancelled()).toBe(true); // the body is released
    checked.push('a data line that is not JSON after two good events in one read: the two, then SyntaxError');
  });

  it('a payload with an error object: the events before it, then an APIError without status', async () => {
    const error = { message: 'overloaded', type: 'server_error' };
    const b = body([frame({ n: 1 }) + frame({ error }) + frame({ n: 2 })]);
    const thrown = await b.read().catch((err: unknown) => err);
    expect(thrown).toBeInstanceOf(APIError);
    expect(thrown).toMatchObject({ status: undefined, error });
    expect((thrown as APIError).headers?.get('x-request-id')).toBe('req_1');
    expect(b.handed).toEqual([{ n: 1 }]);
    checked.push('an in-stream { error } after one good event: the event, then APIError (no status, headers kept)');
  });

  it('an error thrown by the consumer ends the read at once: no later event of that read', async () => {
    const b = body([frame({ n: 1 }) + frame({ n: 2 }) + frame({ n: 3 })]);
    const boom = new Error('consumer');
    await expect(
      b.read((chunk) => {
        if ((chunk as { n: number }).n === 2) throw boom;
        return true;
      }),
    ).rejects.toBe(boom);
    expect(b.handed).toEqual([{ n: 1 }, { n: 2 }]);
    checked.push('the consumer throws on the second of three events in one read: the third is never handed over');
  });

  it('events and code points split across reads, CRLF line ends, event names and comments', async () => {
    const text = frame({ t: 'naïve ☕' });
    const bytes = encoder.encode(text);
    const cut = bytes.indexOf(0xe2) + 1; // inside the 3-byte ☕
    const b = body([
      ': keep-alive comment\n\n',
      bytes.slice(0, cut),
      bytes.slice(cut),
      'event: response.output_text.delta\r\ndata: {"type":"response.output_text.delta",',
      '"delta":"x"}\r\n\r\n',
      'event: ping\n\n', // an event without data: nothing to hand over
    ]);
    expect(await b.read()).toEqual({ end: 'ended' });
    expect(b.handed).toEqual([{ t: 'naïve ☕' }, { type: 'response.output_text.delta', delta: 'x' }]);
  });

  it('a BOM and code points of 2, 3 and 4 bytes split at every byte, in two or three reads, are decoded whole', async () => {
    const text = 'é€😀';
    const bytes = new Uint8Array([0xef, 0xbb, 0xbf, ...encoder.encode(`data:${JSON.stringify({ t: text })}\n\n`)]);
    let splits = 0;
    for (let i = 1; i < bytes.length; i++) {
      for (let j = i; j < bytes.length; j++) {
        const b = body(
          j === i ? [bytes.slice(0, i), bytes.slice(i)] : [bytes.slice(0, i), bytes.slice(i, j), bytes.slice(j)],
        );
        expect(await b.read()).toEqual({ end: 'ended' });
        expect(b.handed, `reads cut at ${i} and ${j}`).toEqual([{ t: text }]);
        splits++;
      }
    }
    checked.push(
      `a BOM, then 2-, 3- and 4-byte code points: ${splits} ways to cut the body into reads, each decoded whole`,
    );
  });

  it('data: [DONE] ends the content; the rest of the body is still read to its end', async () => {
    const b = body([frame({ n: 1 }) + SSE_DONE + frame({ n: 2 }), frame({ n: 3 })]);
    expect(await b.read()).toEqual({ end: 'ended' });
    expect(b.handed).toEqual([{ n: 1 }]);
    expect(b.seenAtRead).toEqual([0, 1, 1]); // three reads: the body was drained, so the connection can be reused
    expect(b.cancelled()).toBe(false);
  });

  it('the consumer returning false stops: the rest of the read is dropped and the body cancelled', async () => {
    const b = body([frame({ n: 1 }) + frame({ n: 2 }) + frame({ n: 3 }), frame({ n: 4 })]);
    expect(await b.read((chunk) => (chunk as { n: number }).n !== 2)).toEqual({ end: 'stopped' });
    expect(b.handed).toEqual([{ n: 1 }, { n: 2 }]);
    expect(b.cancelled()).toBe(true);
  });

  it('a failed read is returned as cut, after the events read before it', async () => {
    const terminated = new TypeError('terminated');
    const b = body([frame({ n: 1 }) + frame({ n: 2 }), terminated]);
    expect(await b.read()).toEqual({ end: 'cut', error: terminated });
    expect(b.handed).toEqual([{ n: 1 }, { n: 2 }]);
    checked.push('the connection cut after two events: both handed over, then { end: "cut", error }');
  });

  it('CR line ends: an event whose blank line is the last CR of the body is handed over, as the SDK hands it over', async () => {
    const b = body([frame({ n: 1 }).replaceAll('\n', '\r') + 'data: {"n":2}\r', '\r']);
    expect(await b.read()).toEqual({ end: 'ended' });
    expect(b.handed).toEqual([{ n: 1 }, { n: 2 }]);
    // A CR at the end of a read is still a line end when an LF or another line follows in the next one.
    const split = body(['data: {"n":1}\r', '\n\r', '\ndata:{"n":2}\r\r', '\ndata: {"n":3}\n\n']);
    expect(await split.read()).toEqual({ end: 'ended' });
    expect(split.handed).toEqual([{ n: 1 }, { n: 2 }, { n: 3 }]);
    // A last line ended by a CR but no blank line after it is still an event cut off by the end: dropped.
    const cut = body([frame({ n: 1 }) + 'data: {"n":2}\r']);
    expect(await cut.read()).toEqual({ end: 'ended' });
    expect(cut.handed).toEqual([{ n: 1 }]);
    checked.push("CR line ends, the body ending on the blank line's CR: the last event handed over, not dropped");
  });

  it('an event cut off by the end of the body (no blank line after it) is dropped, as the SDK drops it', async () => {
    const b = body([frame({ n: 1 }) + 'data: {"n":2}\n']);
    expect(await b.read()).toEqual({ end: 'ended' });
    expect(b.handed).toEqual([{ n: 1 }]);
    checked.push('a last event without its blank line: dropped');
  });
});

describe('through the adapters: a malformed frame after good ones in one write', () => {
  let server: OpenAIServer;
  beforeAll(async () => void (server = await startOpenAIServer()));
  afterAll(() => server.close());
  const options = () => ({ model: 'm', apiKey: 'k', baseURL: server.baseURL });
  const request: ModelRequest = {
    instructions: '',
    items: [{ type: 'user', id: 'u', text: 'hi' }],
    tools: [],
    stream: true,
  };

  it('Chat Completions: the deltas before it, then a non-retryable invalid_json ModelCallError', async () => {
    const good = sseData(chatChunk({ role: 'assistant', content: 'Hel' })) + sseData(chatChunk({ content: 'lo' }));
    server.enqueue({ sse: [good + 'data: {"choices": [\n\n' + sseData(chatChunk({ content: '!' })) + SSE_DONE] });
    const { events, error, completed } = await collect<ModelEvent>(openaiChat(options()).call(request));
    expect(completed).toBe(false);
    expect(events).toEqual([
      { type: 'text_delta', delta: 'Hel' },
      { type: 'text_delta', delta: 'lo' },
    ]);
    expect(error).toBeInstanceOf(ModelCallError);
    expect(error).toMatchObject({ code: 'invalid_json', retryable: false, streamStarted: true });
    checked.push('openaiChat: two deltas, then a data line that is not JSON, in one write: two deltas, invalid_json');
  });

  it('Responses: the deltas before it, then a ModelOutputError naming the field', async () => {
    const delta = (d: unknown) => event('response.output_text.delta', { item_id: 'msg_1', delta: d });
    server.enqueue({ sse: [delta('2 +') + delta(' 2') + delta(5) + delta(' = 4')] });
    const { events, error } = await collect<ModelEvent>(openaiResponses(options()).call(request));
    expect(events).toEqual([
      { type: 'text_delta', delta: '2 +' },
      { type: 'text_delta', delta: ' 2' },
    ]);
    expect(error).toBeInstanceOf(ModelOutputError);
    expect(error).toMatchObject({ code: 'malformed_chunk', field: 'delta' });
    checked.push(
      'openaiResponses: two deltas, then a delta that is a number, in one write: two deltas, malformed_chunk',
    );
  });
});

describe('through the adapters: CR line ends', () => {
  let server: OpenAIServer;
  beforeAll(async () => void (server = await startOpenAIServer()));
  afterAll(() => server.close());
  const request: ModelRequest = {
    instructions: '',
    items: [{ type: 'user', id: 'u', text: 'hi' }],
    tools: [],
    stream: true,
  };

  it('Chat Completions with CR line ends and no [DONE]: the finish_reason chunk at the very end is the answer', async () => {
    const cr = (payload: unknown) => sseData(payload).replaceAll('\n', '\r');
    server.enqueue({
      sse: [cr(chatChunk({ role: 'assistant', content: 'ok' })), cr(chatChunk({}, { finishReason: 'stop' }))],
    });
    const { events, error, completed } = await collect<ModelEvent>(
      openaiChat({ model: 'm', apiKey: 'k', baseURL: server.baseURL }).call(request),
    );
    expect(error).toBeUndefined();
    expect(completed).toBe(true);
    expect(events.at(-1)).toMatchObject({ type: 'response', response: { text: 'ok', finishReason: 'stop' } });
    checked.push('openaiChat: CR line ends, the finish chunk last in the body: a response, not stream_truncated');
  });
});
