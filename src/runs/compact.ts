import { filter, map, type MonoTypeOperatorFunction } from 'rxjs';
import { sliceAfterSeq } from '../engine/replay.js';
import type { RunEvent, TextDelta } from '../events.js';

/**
 * Resuming after a seq when text deltas were compacted (`start(…, { replay: 'compact' })`): consecutive
 * `text_delta`s of one model attempt are kept as one event whose `seq` is the last delta's, with
 * `fromSeq` (the first delta's seq) and `offsets` (where each original delta began in `delta`). Delta `i`
 * had seq `fromSeq + i`: the deltas of one attempt follow each other with no event between them. These
 * pure functions cut such an event at any seq, so a subscriber that saw events up to `afterSeq` gets
 * exactly the text it missed; the cut itself is the engine's `sliceAfterSeq` (one implementation).
 * Isomorphic.
 */

/** A `text_delta` standing for the deltas `fromSeq … seq`; `offsets[i]` is where delta `i` began in `delta`. */
export type CompactTextDelta = TextDelta & { readonly fromSeq: number; readonly offsets: readonly number[] };

/**
 * True for a well-formed compacted `text_delta`: integer `fromSeq`, `offsets` starting at 0, non-decreasing,
 * within `delta`, one per seq from `fromSeq` to `seq`. Anything else (a plain delta, or a malformed
 * compaction) is treated as one event at its `seq`.
 */
export function isCompactTextDelta(event: RunEvent): event is CompactTextDelta {
  if (event.type !== 'text_delta') return false;
  const { fromSeq, offsets } = event as Partial<CompactTextDelta>;
  if (!Number.isInteger(fromSeq) || !Array.isArray(offsets) || offsets.length === 0) return false;
  if (event.seq !== (fromSeq as number) + offsets.length - 1 || offsets[0] !== 0) return false;
  for (let i = 1; i < offsets.length; i++) {
    const o = offsets[i];
    if (!Number.isInteger(o) || o < offsets[i - 1]! || o > event.delta.length) return false;
  }
  return true;
}

/** The two sides of a compacted delta cut after a seq; either is absent when nothing falls on its side. */
export interface CompactTextSplit {
  /** The deltas with seq ≤ `afterSeq`, as one compacted delta whose `seq` is the last of them. */
  readonly before?: CompactTextDelta;
  /** The deltas with seq > `afterSeq`: the text a subscriber that saw `afterSeq` missed. */
  readonly after?: CompactTextDelta;
}

/**
 * Cuts a compacted `text_delta` after `afterSeq`. `before.delta + after.delta` is the whole text, and
 * `after.delta` is exactly the text of the deltas with a seq above `afterSeq`; both keep the compaction
 * fields (offsets shifted to their own text). The cut is `sliceAfterSeq`'s (the engine's, behind
 * `start()`'s compact replay): `before` is what it leaves out.
 */
export function splitCompactText(event: CompactTextDelta, afterSeq: number): CompactTextSplit {
  const { fromSeq, offsets, delta } = event;
  if (afterSeq < fromSeq) return { after: event };
  if (afterSeq >= event.seq) return { before: event };
  const missed = sliceAfterSeq(event, afterSeq)!;
  const n = afterSeq - fromSeq + 1; // deltas on the `before` side
  const seen = delta.slice(0, delta.length - missed.delta.length);
  return {
    before: { ...event, seq: afterSeq, delta: seen, offsets: offsets.slice(0, n) },
    // One delta left is given as it was emitted live; here it keeps the compaction fields, as a side of a cut.
    after: { ...missed, fromSeq: missed.fromSeq ?? missed.seq, offsets: missed.offsets ?? [0] },
  };
}

/**
 * The events after `afterSeq` (all of them when it is undefined): events with a higher `seq`, and the
 * missed part of a compacted `text_delta` that straddles it, as `sliceAfterSeq` gives it (so a resumed
 * `Runs.events` and a late subscriber of `handle.events$` get the same events). A malformed compaction
 * (see {@link isCompactTextDelta}) is kept whole.
 */
export function eventsAfter(afterSeq: number | undefined): MonoTypeOperatorFunction<RunEvent> {
  if (afterSeq === undefined) return (source) => source;
  return (source) =>
    source.pipe(
      filter((e) => e.seq > afterSeq),
      map((e) => (isCompactTextDelta(e) ? sliceAfterSeq(e, afterSeq)! : e)),
    );
}
