/**
 * localRuns keeps ended runs and idle threads for as long as documented, on a virtual clock: an ended run
 * for retainFinishedMs (then RunNotFoundError), however many runs ended meanwhile; a thread with no live run
 * for retainIdleThreadsMs after its last use (then it is forgotten with its MemorySession history and its
 * mailbox); a thread whose run is live is never forgotten; retainFinishedRuns is a cap on top.
 */
import { lastValueFrom, toArray } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { defineAgent, localRuns, type ModelProvider, type ModelRequest } from '../src/index.js';
import { NEVER, of } from 'rxjs';
import { virtualTime } from './support/virtual-time.js';

/** Answers with the user texts it saw, so a thread's history shows in the output; `hold` never answers. */
const model: ModelProvider = {
  id: 'history',
  stream: false,
  call: (request: ModelRequest) => {
    const texts = request.items.flatMap((i) => (i.type === 'user' ? [i.text] : []));
    if (texts.at(-1) === 'hold') return NEVER;
    return of({
      type: 'response' as const,
      response: { text: texts.join('|'), toolCalls: [], finishReason: 'stop' as const },
    });
  },
};
const agents = { helper: defineAgent({ name: 'helper', instructions: 'Help.', model }) };
const P = 'alice';
const outputOf = async (runs: ReturnType<typeof localRuns>, runId: string) => {
  const events = await lastValueFrom(runs.events(runId, { principal: P }).pipe(toArray()));
  const last = events.at(-1);
  return last?.type === 'run_completed' ? last.output : last?.type;
};
const notFound = (p: Promise<unknown>) =>
  p.then(
    () => 'resolved',
    (e: Error) => e.name,
  );

describe('localRuns retention', () => {
  it('an ended run stays readable for retainFinishedMs even after 2 000 more runs ended, then RunNotFoundError', async () => {
    const clock = virtualTime();
    const runs = localRuns({ agents, retainFinishedMs: 1_000, scheduler: clock.scheduler });
    const first = await runs.start({ agent: 'helper', threadId: 'first', input: 'hi', principal: P });
    for (let i = 0; i < 2_000; i++) await runs.start({ agent: 'helper', threadId: `t${i}`, input: 'x', principal: P });
    await clock.advance(999);
    expect(await outputOf(runs, first.runId)).toBe('hi');
    await clock.advance(1);
    expect(await notFound(outputOf(runs, first.runId))).toBe('RunNotFoundError');
    expect(await notFound(runs.cancel(first.runId, 'late', P))).toBe('RunNotFoundError');
  });

  it('retainFinishedRuns caps the ended runs kept on top of the time: the oldest forgotten first', async () => {
    const clock = virtualTime();
    const runs = localRuns({ agents, retainFinishedRuns: 2, scheduler: clock.scheduler });
    const ids: string[] = [];
    for (const t of ['a', 'b', 'c']) {
      const { runId } = await runs.start({ agent: 'helper', threadId: t, input: t, principal: P });
      if (ids.length < 2) expect(await outputOf(runs, runId)).toBe(t); // ended before the next one starts
      ids.push(runId);
    }
    await lastValueFrom(runs.events(ids[2]!, { principal: P }).pipe(toArray()));
    expect(await notFound(outputOf(runs, ids[0]!))).toBe('RunNotFoundError');
    expect(await outputOf(runs, ids[1]!)).toBe('b');
    expect(await outputOf(runs, ids[2]!)).toBe('c');
  });

  it('an idle thread is kept retainIdleThreadsMs after its last use, then forgotten with its history', async () => {
    const clock = virtualTime();
    const runs = localRuns({ agents, retainIdleThreadsMs: 10_000, scheduler: clock.scheduler });
    const start = async (input: string) =>
      outputOf(runs, (await runs.start({ agent: 'helper', threadId: 't', input, principal: P })).runId);
    expect(await start('one')).toBe('one');
    await clock.advance(9_999);
    expect(await start('two')).toBe('one|two'); // used again: its time starts over
    await clock.advance(9_999);
    expect(await start('three')).toBe('one|two|three');
    await clock.advance(10_000);
    expect(await start('four')).toBe('four'); // forgotten: a new thread, an empty MemorySession
  });

  it('a thread whose run is live is never forgotten, however long it runs; its time starts when the run ends', async () => {
    const clock = virtualTime();
    const runs = localRuns({ agents, retainIdleThreadsMs: 10_000, scheduler: clock.scheduler });
    const held = await runs.start({ agent: 'helper', threadId: 't', input: 'hold', principal: P });
    await clock.advance(50_000);
    const steered = await runs.start({ agent: 'helper', threadId: 't', input: 'more', principal: P });
    expect(steered.runId).toBe(held.runId); // still the live run of the same thread
    expect(await runs.cancel(held.runId, 'done', P)).toBe(true);
    await clock.advance(9_999);
    // The cancelled run gave its steering back to the thread's mailbox: the next run takes it.
    const next = await runs.start({ agent: 'helper', threadId: 't', input: 'after', principal: P });
    expect(await outputOf(runs, next.runId)).toBe('more|after');
  });

  it('bad retention options are a ConfigurationError naming them', () => {
    const field = (o: object) => {
      try {
        localRuns({ agents, ...o });
      } catch (e) {
        return (e as { field?: string }).field;
      }
      return undefined;
    };
    expect(field({ retainFinishedMs: 0 })).toBe('options.retainFinishedMs');
    expect(field({ retainFinishedMs: 2 ** 31 })).toBe('options.retainFinishedMs');
    expect(field({ retainIdleThreadsMs: Infinity })).toBe('options.retainIdleThreadsMs');
    expect(field({ retainFinishedRuns: 1.5 })).toBe('options.retainFinishedRuns');
    expect(field({ scheduler: {} })).toBe('options.scheduler');
  });
});
