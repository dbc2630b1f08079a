import { EventEncoder } from '@ag-ui/encoder';
import { Subject, concat, ignoreElements, of, take } from 'rxjs';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { defineAgent, localRuns, type ModelEvent, type ModelProvider } from '../src/index.js';
import { createHandler } from '../src/http/index.js';
import { bearer, listen, parseSse, type Listening } from './support/http.js';

/**
 * Many readers of one run: the readers that attach with no cursor share one mapping and one SSE encoding
 * per frame, so they receive the same bytes and each frame is encoded once, whatever the number of readers.
 */

let server: Listening | undefined;
afterEach(async () => {
  vi.restoreAllMocks();
  await server?.close();
  server = undefined;
});

const DELTAS = ['one ', 'two ', 'three ', 'four'];

/** A model whose first two deltas wait for `half`, the last two (and the answer) for `rest`. */
function gatedModel(half: Subject<void>, rest: Subject<void>): ModelProvider {
  const deltas = (from: number, to: number) =>
    DELTAS.slice(from, to).map((delta): ModelEvent => ({ type: 'text_delta', delta }));
  return {
    id: 'gated',
    stream: true,
    call: () =>
      concat(
        half.pipe(take(1), ignoreElements()),
        of(...deltas(0, 2)),
        rest.pipe(take(1), ignoreElements()),
        of(...deltas(2, 4)),
        of<ModelEvent>({
          type: 'response',
          response: {
            text: DELTAS.join(''),
            toolCalls: [],
            finishReason: 'stop',
            usage: { inputTokens: 1, outputTokens: 4, totalTokens: 5 },
          },
        }),
      ),
  };
}

/** Reads an event stream's raw text to its end; `received(n)` settles once `n` frames have come. */
function readRaw(url: string) {
  const waiters: { n: number; resolve: () => void }[] = [];
  let text = '';
  const frames = () => text.split('\n\n').length - 1;
  const done = (async () => {
    const res = await fetch(url, { headers: { authorization: 'Bearer alice', accept: 'text/event-stream' } });
    const decoder = new TextDecoder();
    const reader = res.body!.getReader();
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) {
      text += decoder.decode(chunk.value, { stream: true });
      for (const w of waiters.splice(0)) {
        if (frames() >= w.n) w.resolve();
        else waiters.push(w);
      }
    }
    return text;
  })();
  const received = (n: number) =>
    new Promise<void>((resolve) => {
      if (frames() >= n) resolve();
      else waiters.push({ n, resolve });
    });
  return { done, received };
}

describe('readers of one run without a cursor', () => {
  it('get byte-identical frames, each frame encoded once for all of them, a late joiner included', async () => {
    const half = new Subject<void>();
    const rest = new Subject<void>();
    const runs = localRuns({
      agents: { helper: defineAgent({ name: 'helper', instructions: 'i', model: gatedModel(half, rest) }) },
    });
    server = await listen(createHandler({ runs, authorize: bearer }));
    const encode = vi.spyOn(EventEncoder.prototype, 'encodeSSE');
    const { runId } = await runs.start({ agent: 'helper', threadId: 't1', input: 'go', principal: 'alice' });
    const url = `${server.url}/runs/${encodeURIComponent(runId)}/events?threadId=t1`;

    const a = readRaw(url);
    const b = readRaw(url);
    await Promise.all([a.received(1), b.received(1)]); // both attached: RUN_STARTED is out
    half.next();
    await Promise.all([a.received(5), b.received(5)]); // ... STEP_STARTED, TEXT_MESSAGE_START, two deltas
    const late = readRaw(url); // joins mid-run, while the others are attached
    await late.received(5);
    rest.next();
    const [textA, textB, textLate] = await Promise.all([a.done, b.done, late.done]);

    const frames = parseSse(textA);
    expect(
      frames.filter((f) => f.event.type === 'TEXT_MESSAGE_CONTENT').map((f) => (f.event as { delta: string }).delta),
    ).toEqual(DELTAS);
    expect(frames.at(-1)!.event.type).toBe('RUN_FINISHED');
    expect(textB).toBe(textA);
    expect(textLate).toBe(textA);
    expect(encode).toHaveBeenCalledTimes(frames.length);
  });

  it('a reader with Last-Event-ID maps on its own and gets only what follows its cursor', async () => {
    const half = new Subject<void>();
    const rest = new Subject<void>();
    const runs = localRuns({
      agents: { helper: defineAgent({ name: 'helper', instructions: 'i', model: gatedModel(half, rest) }) },
    });
    server = await listen(createHandler({ runs, authorize: bearer }));
    const { runId } = await runs.start({ agent: 'helper', threadId: 't1', input: 'go', principal: 'alice' });
    const url = `${server.url}/runs/${encodeURIComponent(runId)}/events?threadId=t1`;
    const a = readRaw(url);
    await a.received(1);
    half.next();
    await a.received(5);
    rest.next();
    const all = parseSse(await a.done);
    const cursor = all[3]!.id!; // after the first delta
    const res = await fetch(url, { headers: { authorization: 'Bearer alice', 'last-event-id': cursor } });
    const resumed = parseSse(await res.text());
    const text = resumed.flatMap((f) => (f.event.type === 'TEXT_MESSAGE_CONTENT' ? [f.event.delta] : []));
    expect(text.join('')).toBe(DELTAS.slice(1).join('')); // exactly the text after the cursor (compacted replay)
    expect(resumed.at(-1)!.event.type).toBe('RUN_FINISHED');
  });

  it('past 1 MiB of frames a joiner gets a stream of its own (the run replayed afresh), with the whole text', async () => {
    const big = 'x'.repeat(1024 * 1024 + 1);
    const go = new Subject<void>();
    const rest = new Subject<void>();
    const model: ModelProvider = {
      id: 'big',
      stream: true,
      call: () =>
        concat(
          go.pipe(take(1), ignoreElements()),
          of<ModelEvent[]>({ type: 'text_delta', delta: 'a' }, { type: 'text_delta', delta: big }),
          rest.pipe(take(1), ignoreElements()),
          of<ModelEvent[]>(
            { type: 'text_delta', delta: 'z' },
            {
              type: 'response',
              response: {
                text: `a${big}z`,
                toolCalls: [],
                finishReason: 'stop',
                usage: { inputTokens: 1, outputTokens: 3, totalTokens: 4 },
              },
            },
          ),
        ),
    };
    const runs = localRuns({ agents: { helper: defineAgent({ name: 'helper', instructions: 'i', model }) } });
    // Room for the big frame in each response's buffer: a reader is not cut off as slow here.
    server = await listen(createHandler({ runs, authorize: bearer, maxBufferedBytes: 8 * 1024 * 1024 }));
    const { runId } = await runs.start({ agent: 'helper', threadId: 't1', input: 'go', principal: 'alice' });
    const url = `${server.url}/runs/${encodeURIComponent(runId)}/events?threadId=t1`;
    const encode = vi.spyOn(EventEncoder.prototype, 'encodeSSE');
    const a = readRaw(url);
    await a.received(1); // attached before the deltas
    go.next();
    await a.received(5); // RUN_STARTED, STEP_STARTED, TEXT_MESSAGE_START, 'a', the big delta
    const late = readRaw(url);
    await late.received(4); // its own replay: the two deltas compacted into one
    rest.next();
    const [textA, textLate] = await Promise.all([a.done, late.done]);
    const deltas = (text: string) =>
      parseSse(text).flatMap((f) => (f.event.type === 'TEXT_MESSAGE_CONTENT' ? [f.event.delta] : []));
    expect(deltas(textA)).toEqual(['a', big, 'z']);
    expect(deltas(textLate)).toEqual([`a${big}`, 'z']);
    expect(encode.mock.calls.length).toBe(parseSse(textA).length + parseSse(textLate).length);
  });
});
