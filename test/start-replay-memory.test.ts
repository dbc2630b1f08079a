/**
 * "start() memory on long runs": a kept handle over a 100 000-delta run in `replay: 'compact'`
 * holds at most the answer text plus 64 KiB. Measured with forced garbage collection (the test
 * runner starts workers with --expose-gc): the heap with the handle kept, minus the heap once it is
 * dropped. The same run with `replay: 'all'` is measured too, to show the measure can fail.
 */
import { Observable } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { defineAgent, start, type ModelEvent, type ModelProvider, type RunHandle } from '../src/index.js';

const DELTAS = 100_000;
const SLACK = 64 * 1024;

declare const gc: () => void;

/** A model that streams DELTAS token-like deltas (1 to 9 characters) synchronously; only the run holds them. */
function longAnswer(): ModelProvider {
  return {
    id: 'long',
    call: () =>
      new Observable<ModelEvent>((subscriber) => {
        const parts: string[] = [];
        for (let i = 0; i < DELTAS && !subscriber.closed; i++) {
          const delta = `${'abcdefghi'.slice(0, 1 + (i % 9))}`;
          parts.push(delta);
          subscriber.next({ type: 'text_delta', delta });
        }
        const response = { text: parts.join(''), toolCalls: [], finishReason: 'stop' as const };
        parts.length = 0;
        subscriber.next({ type: 'response', response });
        subscriber.complete();
      }),
  };
}

/**
 * The JavaScript heap plus ArrayBuffer backing stores (a typed array's bytes live outside the heap),
 * after a full collection in a task of its own (nothing the current job keeps alive is counted).
 */
async function heap(): Promise<number> {
  await new Promise((resolve) => setImmediate(resolve));
  for (let i = 0; i < 4; i++) gc();
  const { heapUsed, arrayBuffers } = process.memoryUsage();
  return heapUsed + arrayBuffers;
}

/** A finished run's handle, kept by nothing but the returned holder, and the length of its answer. */
async function finishedHandle(replay: 'all' | 'compact'): Promise<{ handle?: RunHandle; answer: number }> {
  const agent = defineAgent({ name: 'long', instructions: '', model: longAnswer() });
  const handle = start(agent, 'go', { replay });
  const answer = (await handle.result).output.length;
  return { handle, answer };
}

/**
 * Bytes a finished handle keeps alive: the heap while it is kept minus the heap once it is dropped
 * (the run is made in another function, so no stray local of this one holds any of it). The least
 * of three runs: whatever else allocates meanwhile (the test runner's own messages) only adds.
 */
async function retainedBy(replay: 'all' | 'compact'): Promise<{ bytes: number; answer: number }> {
  let bytes = Infinity;
  let answer = 0;
  for (let i = 0; i < 3; i++) {
    const holder = await finishedHandle(replay);
    // Collections age out the bytecode of functions that no longer run; let that happen first, so
    // the two measures below differ by the handle only.
    for (let age = 0; age < 3; age++) await heap();
    const kept = await heap();
    delete holder.handle;
    const dropped = await heap();
    bytes = Math.min(bytes, kept - dropped);
    answer = holder.answer;
  }
  return { bytes, answer };
}

describe('a kept handle over a 100 000-delta run', () => {
  it("with replay: 'compact' holds at most the answer text plus 64 KiB", async () => {
    expect(typeof gc).toBe('function');
    await retainedBy('compact'); // warm up: code and caches the measure must not count
    const compact = await retainedBy('compact');
    expect(compact.answer).toBe(11_111 * 45 + 1); // 11 111 cycles of 1..9 characters, then one of 1
    expect(compact.bytes).toBeLessThanOrEqual(compact.answer + SLACK);
    const all = await retainedBy('all');
    expect(all.bytes).toBeGreaterThan(10 * (all.answer + SLACK)); // every delta kept as an event
    // Nine 100 000-delta runs and 180 full collections: CPU work (4 s on an idle machine) that a loaded one stretches.
  }, 120_000);
});
