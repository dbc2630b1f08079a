/**
 * The in-process guarantees that make sense remotely, against queueRuns with worker processes: one terminal
 * event per run whatever races it (cancels from two API processes racing completion), exactly one cancel
 * answering true when the run ended cancelled, and steering delivered exactly once across many runs.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { isTerminalEvent, type RunEvent } from '../../src/index.js';
import { queueRuns } from '../../src/bullmq/index.js';
import { allEvents, gapless, QUEUE_SECRET, queueFixture, sleep, type QueueFixture } from './support/queue.js';

const P = 'alice';
let fx: QueueFixture | undefined;
afterEach(async () => {
  await fx?.cleanup();
  fx = undefined;
});

describe('queueRuns guarantees', () => {
  it('terminal exactly once: 30 runs, each cancelled from two API processes at once at a random moment', async () => {
    fx = queueFixture();
    const other = queueRuns({ connection: fx.url, queue: fx.queue, prefix: fx.prefix, secret: QUEUE_SECRET });
    try {
      await Promise.all([fx.worker({ concurrency: 10 }), fx.worker({ concurrency: 10 })]);
      const results = await Promise.all(
        Array.from({ length: 30 }, async (_, i) => {
          const { runId } = await fx!.runs.start({
            agent: 'queue-agent',
            threadId: `t${i}`,
            input: '!stream 10 20',
            principal: P,
          });
          await sleep(Math.floor(Math.random() * 400));
          const answers = await Promise.all([fx!.runs.cancel(runId, 'a', P), other.cancel(runId, 'b', P)]);
          const events = await allEvents(fx!.runs.events(runId, { principal: P }));
          return { answers, events };
        }),
      );
      for (const { answers, events } of results) {
        const terminals = events.filter(isTerminalEvent);
        expect(terminals).toHaveLength(1);
        expect(gapless(events)).toBe(true);
        const cancelled = terminals[0]!.type === 'run_cancelled';
        // Exactly one of the two cancels answers true when the run ended cancelled (the one that ended it);
        // both answer false when it ended otherwise.
        expect(answers.filter((a) => a).length).toBe(cancelled ? 1 : 0);
      }
    } finally {
      await other.close();
    }
  }, 120_000);

  it('steering exactly once: 10 live runs each steered 5 times from here; each item injected once, in order', async () => {
    fx = queueFixture();
    await fx.worker({ concurrency: 10 });
    const runs = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        fx!.runs.start({ agent: 'queue-agent', threadId: `t${i}`, input: '!turns 4 300', principal: P }),
      ),
    );
    await Promise.all(
      runs.map(async ({ runId }, i) => {
        for (let k = 0; k < 5; k++) {
          await fx!.runs.steer(runId, `r${i}-s${k}`, P);
          await sleep(60);
        }
      }),
    );
    for (const [i, { runId }] of runs.entries()) {
      const events: RunEvent[] = await allEvents(fx.runs.events(runId, { principal: P }));
      const injected = events.flatMap((e) => (e.type === 'user_message_injected' ? [e.content] : []));
      const terminal = events.at(-1)!;
      const undelivered = terminal.type === 'run_completed' ? terminal.undelivered.map((u) => u.content) : [];
      expect([...injected, ...undelivered]).toEqual([0, 1, 2, 3, 4].map((k) => `r${i}-s${k}`));
    }
  }, 120_000);
});
