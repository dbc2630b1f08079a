import fc from 'fast-check';
import { from, lastValueFrom, toArray } from 'rxjs';
import { describe, expect, it } from 'vitest';
import {
  eventsAfter,
  isCompactTextDelta,
  splitCompactText,
  type CompactTextDelta,
  type RunEvent,
} from '../src/index.js';

/**
 * Resuming a compacted run after any seq (replay 'compact'): the deltas `fromSeq … seq` kept as one event
 * with `offsets`. Cutting it after `afterSeq` yields exactly the text of the deltas with a higher seq.
 */

const base = { runId: 'r', turn: 1, at: 0 };
function compact(deltas: readonly string[], fromSeq: number): CompactTextDelta {
  const offsets: number[] = [];
  let text = '';
  for (const d of deltas) {
    offsets.push(text.length);
    text += d;
  }
  return { type: 'text_delta', ...base, seq: fromSeq + deltas.length - 1, delta: text, fromSeq, offsets };
}

describe('splitCompactText: resuming after any seq yields exactly the missed text', () => {
  it('property: for every afterSeq, after.delta is the concatenation of the deltas with a higher seq', () => {
    fc.assert(
      fc.property(
        fc.array(fc.string({ unit: 'grapheme', maxLength: 6 }), { minLength: 1, maxLength: 12 }),
        fc.nat(50),
        (deltas, fromSeq) => {
          const c = compact(deltas, fromSeq);
          expect(isCompactTextDelta(c)).toBe(true);
          for (let afterSeq = fromSeq - 2; afterSeq <= c.seq + 1; afterSeq++) {
            const { before, after } = splitCompactText(c, afterSeq);
            const missed = deltas.filter((_, i) => fromSeq + i > afterSeq).join('');
            const seen = deltas.filter((_, i) => fromSeq + i <= afterSeq).join('');
            expect(after?.delta ?? '').toBe(missed);
            expect(before?.delta ?? '').toBe(seen);
            // Each side is itself a well-formed compaction, cut again at any seq with the same result.
            if (after) {
              expect(isCompactTextDelta(after)).toBe(true);
              expect(after.seq).toBe(c.seq);
              expect(after.fromSeq).toBe(Math.max(fromSeq, afterSeq + 1));
            }
            if (before) {
              expect(isCompactTextDelta(before)).toBe(true);
              expect(before.seq).toBe(Math.min(c.seq, afterSeq));
              expect(before.fromSeq).toBe(fromSeq);
            }
            expect(after === undefined).toBe(afterSeq >= c.seq);
            expect(before === undefined).toBe(afterSeq < fromSeq);
          }
        },
      ),
      { numRuns: 500 },
    );
  });

  it('eventsAfter: plain events by seq, a straddling compaction cut, malformed compactions kept whole', async () => {
    const c = compact(['He', 'l', '', 'lo'], 3); // seqs 3..6
    const list: RunEvent[] = [
      { type: 'run_started', ...base, seq: 0, agent: 'a' },
      { type: 'turn_started', ...base, seq: 1 },
      { type: 'model_request_started', ...base, seq: 2, model: 'm', attempt: 1, stream: true },
      c,
      { type: 'turn_completed', ...base, seq: 7 },
    ];
    const after = (seq: number | undefined) => lastValueFrom(from(list).pipe(eventsAfter(seq), toArray()));
    expect(await after(undefined)).toEqual(list);
    expect(await after(2)).toEqual(list.slice(3));
    expect((await after(3)).map((e) => (e.type === 'text_delta' ? e.delta : e.type))).toEqual([
      'llo',
      'turn_completed',
    ]);
    expect((await after(5)).map((e) => (e.type === 'text_delta' ? e.delta : e.type))).toEqual(['lo', 'turn_completed']);
    expect((await after(6)).map((e) => e.type)).toEqual(['turn_completed']);

    const malformed = [
      { ...c, offsets: [0, 2] },
      { ...c, offsets: [1, 2, 3, 3] },
      { ...c, offsets: [0, 3, 2, 3] },
    ];
    for (const m of malformed) {
      expect(isCompactTextDelta(m)).toBe(false);
      expect(await lastValueFrom(from([m as RunEvent]).pipe(eventsAfter(4), toArray()))).toEqual([m]);
    }
  });
});
