import { Observable, Subject } from 'rxjs';
import type { RunEvent, TextDelta } from '../events.js';
import type { ReplayMode } from './types.js';

/**
 * The part of a compacted `text_delta` that a subscriber who already has every event up to
 * `afterSeq` is missing ("start() memory on long runs"): `undefined` when it has them all
 * (`event.seq <= afterSeq`), the whole event when it has none of them, else a `text_delta` with the
 * text from the first missed delta on, `fromSeq` = `afterSeq + 1` and `offsets` shifted to it. When
 * one delta is left, the result is that delta as it was emitted live (no `fromSeq`, no `offsets`).
 * A plain `text_delta` (no `fromSeq`) is one delta. Pure: `event` is not changed.
 * Throws `TypeError` naming the field when `fromSeq` and `offsets` do not describe
 * `seq - fromSeq + 1` deltas.
 *
 * @example
 * // an HTTP client resuming after seq 41 of a compacted replay
 * const missed = event.type === 'text_delta' ? sliceAfterSeq(event, 41) : event;
 */
export function sliceAfterSeq(event: TextDelta, afterSeq: number): TextDelta | undefined {
  if (event.seq <= afterSeq) return undefined;
  const from = event.fromSeq ?? event.seq;
  if (afterSeq < from) return event;
  const offsets = event.offsets;
  const count = event.seq - from + 1;
  if (offsets === undefined || offsets.length !== count) {
    throw new TypeError(`sliceAfterSeq: event.offsets must hold one offset per delta from fromSeq to seq (${count})`);
  }
  const k = afterSeq - from + 1;
  const start = offsets[k]!;
  const delta = event.delta.slice(start);
  const { runId, seq, turn, at } = event;
  if (k === count - 1) return { type: 'text_delta', runId, seq, turn, at, delta };
  const rest: number[] = new Array<number>(count - k);
  for (let i = k; i < count; i++) rest[i - k] = offsets[i]! - start;
  return { type: 'text_delta', runId, seq, turn, at, delta, fromSeq: afterSeq + 1, offsets: rest };
}

/** Deltas are joined into the kept text this many at a time (the text stays a handful of flat strings). */
const JOIN_EVERY = 1024;
/** Lengths packed per 32-bit word, each a base-11 digit: 0 to 9 is the length, {@link LONG} says "look aside". */
const PER_WORD = 9;
const BASE = 11;
const LONG = 10;

/**
 * The lengths of many deltas in little room: nine per 32-bit word (11^9 < 2^32), so a delta shorter
 * than 10 characters (a typical token) costs under half a byte; a longer one, whose text costs more
 * anyway, also keeps its length in a side list.
 */
class Lengths {
  count = 0;
  #words: Uint32Array = new Uint32Array(16);
  #long: Uint32Array = new Uint32Array(0);
  #longCount = 0;

  push(length: number): void {
    const word = Math.floor(this.count / PER_WORD);
    if (word >= this.#words.length) this.#words = grown(this.#words, this.#words.length * 2);
    const digit = length < LONG ? length : LONG;
    if (digit === LONG) {
      if (this.#longCount >= this.#long.length) this.#long = grown(this.#long, Math.max(8, this.#long.length * 2));
      this.#long[this.#longCount++] = length;
    }
    this.#words[word]! += digit * BASE ** (this.count % PER_WORD);
    this.count++;
  }

  /** Where each delta began in the joined text. */
  offsets(): number[] {
    const out = new Array<number>(this.count);
    let at = 0;
    let long = 0;
    let word = 0;
    for (let i = 0; i < this.count; i++) {
      if (i % PER_WORD === 0) word = this.#words[i / PER_WORD]!;
      out[i] = at;
      const digit = word % BASE;
      word = (word - digit) / BASE;
      at += digit === LONG ? this.#long[long++]! : digit;
    }
    return out;
  }

  /** No spare room once no length is added any more. */
  trim(): void {
    const used = Math.ceil(this.count / PER_WORD);
    if (used < this.#words.length) this.#words = this.#words.slice(0, used);
    if (this.#longCount < this.#long.length) this.#long = this.#long.slice(0, this.#longCount);
  }
}

function grown(words: Uint32Array, size: number): Uint32Array {
  const out = new Uint32Array(size);
  out.set(words);
  return out;
}

/** Consecutive `text_delta`s of one model attempt, kept as their joined text and their lengths. */
class DeltaRun {
  readonly runId: string;
  readonly turn: number;
  readonly fromSeq: number;
  seq: number;
  at: number;
  #text = '';
  #parts: string[] = [];
  readonly #lengths = new Lengths();

  constructor(first: TextDelta) {
    this.runId = first.runId;
    this.turn = first.turn;
    this.fromSeq = first.fromSeq ?? first.seq;
    this.seq = first.seq;
    this.at = first.at;
    this.#append(first.delta);
  }

  add(event: TextDelta): void {
    this.seq = event.seq;
    this.at = event.at;
    this.#append(event.delta);
  }

  get text(): string {
    if (this.#parts.length > 0) {
      this.#text += this.#parts.join('');
      this.#parts = [];
    }
    return this.#text;
  }

  /** The run of deltas is over (another event came): its text is joined and its lengths take no spare room. */
  seal(): void {
    void this.text;
    this.#lengths.trim();
  }

  /** Keeps `text` instead of its own copy when they are equal (the answer is then held once). */
  share(text: string): void {
    const own = this.text;
    if (own !== text || own.length === 0) return;
    this.#text = text;
  }

  toEvent(): TextDelta {
    const { runId, seq, turn, at, fromSeq } = this;
    return { type: 'text_delta', runId, seq, turn, at, delta: this.text, fromSeq, offsets: this.#lengths.offsets() };
  }

  #append(delta: string): void {
    this.#lengths.push(delta.length);
    this.#parts.push(delta);
    if (this.#parts.length >= JOIN_EVERY) void this.text;
  }
}

type Entry = RunEvent | DeltaRun;

const lastSeqOf = (entry: Entry): number => entry.seq;
const toEvent = (entry: Entry): RunEvent => (entry instanceof DeltaRun ? entry.toEvent() : entry);

/**
 * The events a `start()` handle keeps and replays (`events$`): every event to each subscriber,
 * those so far first, then the live ones; a subscriber after the end gets them all and completes.
 * With `'compact'`, consecutive `text_delta`s are kept as one (see `sliceAfterSeq`).
 */
export class EventLog {
  readonly #compact: boolean;
  readonly #entries: Entry[] = [];
  readonly #live = new Subject<RunEvent>();
  /** The last run of deltas kept (the final answer's, when the run completes). */
  #lastRun: DeltaRun | undefined;
  #ended = false;

  readonly events$: Observable<RunEvent>;

  constructor(mode: ReplayMode) {
    this.#compact = mode === 'compact';
    this.events$ = new Observable<RunEvent>((subscriber) => {
      // What is kept may grow while it is replayed (a handler that cancels the run): each entry is
      // replayed from what this subscriber has not seen yet.
      let seen = -1;
      for (let i = 0; i < this.#entries.length && !subscriber.closed;) {
        const entry = this.#entries[i]!;
        if (lastSeqOf(entry) <= seen) {
          i++;
          continue;
        }
        const event = toEvent(entry);
        const missed = event.type === 'text_delta' ? sliceAfterSeq(event, seen)! : event;
        seen = event.seq;
        subscriber.next(missed);
      }
      if (this.#ended) return subscriber.complete();
      return this.#live.subscribe(subscriber);
    });
  }

  push(event: RunEvent): void {
    this.#keep(event);
    this.#live.next(event);
  }

  complete(): void {
    this.#ended = true;
    this.#live.complete();
  }

  /** A run's Observable never errors; should it, the error reaches every live subscriber. */
  error(err: unknown): void {
    this.#live.error(err);
  }

  #keep(event: RunEvent): void {
    const entries = this.#entries;
    if (!this.#compact) {
      entries.push(event);
      return;
    }
    const last = entries[entries.length - 1];
    if (event.type === 'text_delta') {
      if (last instanceof DeltaRun && last.seq === event.seq - 1) return last.add(event);
      const single = last !== undefined && !(last instanceof DeltaRun) && last.type === 'text_delta';
      if (single && last.seq === event.seq - 1) {
        const run = new DeltaRun(last);
        run.add(event);
        entries[entries.length - 1] = this.#lastRun = run;
        return;
      }
    } else {
      if (last instanceof DeltaRun) last.seal();
      if (event.type === 'run_completed') this.#lastRun?.share(event.output);
    }
    entries.push(event);
  }
}
