/**
 * `start(…, { replay })` ("start() memory on long runs"): `'all'` replays every event to a late
 * subscriber; `'compact'` replays consecutive `text_delta`s of one model attempt as one event whose
 * `seq` is the last one's, with `fromSeq` and `offsets`, and keeps every other event; `sliceAfterSeq`
 * gives a subscriber resuming after any `seq` exactly the text it missed.
 */
import { Observable, lastValueFrom, toArray } from 'rxjs';
import { describe, expect, it } from 'vitest';
import {
  ConfigurationError,
  ModelCallError,
  RunEventSchema,
  defineAgent,
  sliceAfterSeq,
  start,
  type ModelEvent,
  type ModelProvider,
  type RunEvent,
  type TextDelta,
} from '../src/index.js';
import { scriptedModel, sequentialIds } from '../src/testing/index.js';

const DELTAS = ['Hel', 'lo', ', ', '', 'wor', 'ld', '!'];

/** A provider that streams `DELTAS` synchronously, then the response. */
const streaming: ModelProvider = {
  id: 'stream',
  call: () =>
    new Observable<ModelEvent>((subscriber) => {
      for (const delta of DELTAS) subscriber.next({ type: 'text_delta', delta });
      subscriber.next({ type: 'response', response: { text: DELTAS.join(''), toolCalls: [], finishReason: 'stop' } });
      subscriber.complete();
    }),
};

async function handleOver(replay: 'all' | 'compact' | undefined, model: ModelProvider = streaming) {
  const agent = defineAgent({ name: 'r', instructions: '', model });
  const live: RunEvent[] = [];
  const handle = start(agent, 'hi', { idGenerator: sequentialIds(), ...(replay ? { replay } : {}) });
  handle.events$.subscribe((e) => live.push(e)); // subscribed at once: it missed run_started only
  await handle.result;
  const late = await lastValueFrom(handle.events$.pipe(toArray()));
  return { handle, live, late };
}

const strip = ({ at: _at, ...e }: RunEvent) => e;

describe("start(…, { replay: 'compact' })", () => {
  it('a late subscriber gets the deltas of one attempt as one text_delta (last seq, fromSeq, offsets)', async () => {
    const { late } = await handleOver('compact');
    expect(late.map((e) => e.type)).toEqual([
      'run_started',
      'turn_started',
      'model_request_started',
      'text_delta',
      'model_response_completed',
      'turn_completed',
      'run_completed',
    ]);
    expect(late.map((e) => e.seq)).toEqual([0, 1, 2, 9, 10, 11, 12]);
    expect(strip(late[3]!)).toEqual({
      type: 'text_delta',
      runId: 'run-1',
      seq: 9,
      turn: 1,
      delta: 'Hello, world!',
      fromSeq: 3,
      offsets: [0, 3, 5, 7, 7, 10, 12],
    });
    for (const event of late) expect(RunEventSchema.parse(event)).toEqual(event);
  });

  it('every event but the deltas is kept as delivered; a live subscriber gets every delta as it came', async () => {
    const all = await handleOver('all');
    const compact = await handleOver('compact');
    expect(compact.live.map(strip)).toEqual(all.live.map(strip));
    expect(compact.late.filter((e) => e.type !== 'text_delta').map(strip)).toEqual(
      all.late.filter((e) => e.type !== 'text_delta').map(strip),
    );
    expect(all.late.filter((e) => e.type === 'text_delta').map((e) => (e as TextDelta).delta)).toEqual(DELTAS);
  });

  it('for every seq a subscriber may have seen, sliceAfterSeq gives exactly the text after it', async () => {
    const { live, late } = await handleOver('compact');
    const compacted = late.find((e) => e.type === 'text_delta') as TextDelta;
    const deltas = live.filter((e): e is TextDelta => e.type === 'text_delta');
    for (let after = -1; after <= compacted.seq + 1; after++) {
      const missed = deltas.filter((d) => d.seq > after);
      const sliced = sliceAfterSeq(compacted, after);
      if (missed.length === 0) {
        expect(sliced, `after ${after}`).toBeUndefined();
        continue;
      }
      expect(sliced!.delta, `after ${after}`).toBe(missed.map((d) => d.delta).join(''));
      expect(sliced!.seq).toBe(compacted.seq);
      if (missed.length === 1)
        expect(sliced).toEqual(missed[0]); // one delta left: the event as it was emitted
      else {
        expect(sliced!.fromSeq).toBe(missed[0]!.seq);
        const starts = missed.map((_, i) => missed.slice(0, i).reduce((n, d) => n + d.delta.length, 0));
        expect(sliced!.offsets).toEqual(starts);
        expect(RunEventSchema.parse(sliced)).toEqual(sliced);
      }
    }
    expect(compacted.fromSeq).toBe(3); // the input is not changed
  });

  it('deltas of two attempts (a broken stream, then its rescue) are kept apart', async () => {
    const broken = { text: ['a', 'b'], error: new ModelCallError('down', { retryable: true }) };
    const model = scriptedModel([broken, { text: ['c', 'd'] }]);
    const agent = defineAgent({ name: 'r', instructions: '', model });
    const handle = start(agent, 'hi', { replay: 'compact' });
    await handle.result;
    const late = await lastValueFrom(handle.events$.pipe(toArray()));
    const kept = late.filter((e) => e.type === 'text_delta' || e.type === 'model_request_started');
    expect(kept.map((e) => (e.type === 'text_delta' ? [e.delta, e.offsets ?? null] : [e.type, e.attempt]))).toEqual([
      ['model_request_started', 1],
      ['ab', [0, 1]],
      ['model_request_started', 2],
      ['cd', null], // the rescue's one delta
    ]);
  });

  it('a subscriber that comes while deltas stream gets those so far as one, then the next ones live', async () => {
    const agent = defineAgent({ name: 'r', instructions: '', model: streaming });
    const seen: RunEvent[] = [];
    const h = start(agent, 'hi', { replay: 'compact', idGenerator: sequentialIds() });
    h.events$.subscribe((e) => {
      if (e.type === 'text_delta' && e.seq === 5 && seen.length === 0) {
        h.events$.subscribe((late) => seen.push(late)); // joins after the third delta was kept
      }
    });
    await h.result;
    const deltas = seen.filter((e): e is TextDelta => e.type === 'text_delta');
    expect(deltas.map((d) => [d.seq, d.delta, d.fromSeq ?? null])).toEqual([
      [5, 'Hello, ', 3],
      [6, '', null],
      [7, 'wor', null],
      [8, 'ld', null],
      [9, '!', null],
    ]);
  });

  it("'all' is the default; an unknown replay is a ConfigurationError naming options.replay", async () => {
    const { late } = await handleOver(undefined);
    expect(late.filter((e) => e.type === 'text_delta')).toHaveLength(DELTAS.length);
    const agent = defineAgent({ name: 'r', instructions: '', model: streaming });
    expect(() => start(agent, 'hi', { replay: 'some' as 'all' })).toThrow(ConfigurationError);
    expect(() => start(agent, 'hi', { replay: 'some' as 'all' })).toThrow('options.replay');
  });
});

describe('sliceAfterSeq', () => {
  const base = { type: 'text_delta', runId: 'r', turn: 1, at: 0 } as const;
  it('a plain text_delta is one delta: whole when missed, undefined when seen', () => {
    const one: TextDelta = { ...base, seq: 4, delta: 'x' };
    expect(sliceAfterSeq(one, 3)).toBe(one);
    expect(sliceAfterSeq(one, 4)).toBeUndefined();
  });

  it('offsets that do not match fromSeq..seq are a TypeError naming the field', () => {
    const bad: TextDelta = { ...base, seq: 6, delta: 'abc', fromSeq: 4, offsets: [0, 1] };
    expect(() => sliceAfterSeq(bad, 4)).toThrow(TypeError);
    expect(() => sliceAfterSeq(bad, 4)).toThrow('event.offsets');
  });
});
