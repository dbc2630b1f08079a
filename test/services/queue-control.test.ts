/**
 * Control is durable state (docs/scale-out.md, "Control is state"), against real Redis and a real worker
 * process: a cancel is recorded in the run's control hash before its worker is woken, so a cancel sent while
 * the worker's subscriber reconnects (its connection killed with CLIENT KILL) still lands within the worker's
 * poll; and a command is applied once however often it is read (a flood of wake-ups beside it). Each spec
 * counts and prints the commands lost and the times.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { CONTROL_POLL_MS } from '../../src/bullmq/control-reader.js';
import type { RunEvent } from '../../src/index.js';
import { allEvents, firstOf, queueFixture, sleep, type QueueFixture } from './support/queue.js';

const P = 'alice';
let fx: QueueFixture | undefined;
afterEach(async () => {
  await fx?.cleanup();
  fx = undefined;
});

/**
 * Kills the worker's subscriber connection (found by its name in CLIENT LIST) once it is there (after the previous
 * kill the worker reconnects on its own; this waits up to 10 s for that); resolves how many were killed.
 */
async function killSubscriber(f: QueueFixture, workerId: string): Promise<number> {
  for (let waited = 0; ; waited += 20) {
    const list = (await f.redis.call('CLIENT', 'LIST')) as string;
    const ids = list
      .split('\n')
      .filter((line) => line.includes(` name=loopctl-worker-sub-${workerId} `))
      .map((line) => /(?:^|\s)id=(\d+)/.exec(line)![1]!);
    if (ids.length > 0 || waited >= 10_000) {
      for (const id of ids) await f.redis.call('CLIENT', 'KILL', 'ID', id);
      return ids.length;
    }
    await sleep(20);
  }
}

describe('queue control is durable state', () => {
  it("a cancel sent while the worker's subscriber reconnects lands within the poll interval", async () => {
    fx = queueFixture();
    const worker = await fx.worker();
    const RUNS = 5;
    const BOUND_MS = CONTROL_POLL_MS + 2000; // the poll, plus a loaded machine's slack
    let lost = 0;
    let killed = 0;
    const times: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      const { runId } = await fx.runs.start({
        agent: 'queue-agent',
        threadId: `t${i}`,
        input: '!tool 20000',
        principal: P,
      });
      const events$ = fx.runs.events(runId, { principal: P });
      await firstOf(events$, 'tool_call_started');
      killed += await killSubscriber(fx, worker.id);
      const sent = performance.now();
      const cancelled = fx.runs.cancel(runId, 'stop now', P);
      const inTime = await Promise.race([cancelled.then(() => true), sleep(BOUND_MS).then(() => false)]);
      times.push(Math.round(performance.now() - sent));
      if (!inTime) lost++;
      expect(await cancelled).toBe(true);
      const end = (await allEvents(events$)).at(-1) as Extract<RunEvent, { type: 'run_cancelled' }>;
      expect(end).toMatchObject({ type: 'run_cancelled', reason: 'stop now', phase: 'tool_call' });
    }
    console.log(
      `cancels across a subscriber reconnect: ${RUNS} sent, ${killed} subscriber connections killed, ` +
        `${lost} lost (not applied within ${BOUND_MS} ms); cancel → terminal ms: ${times.join(', ')}`,
    );
    expect(killed).toBe(RUNS);
    expect(lost).toBe(0);
  }, 120_000);

  it('a steer is applied once however often its run is woken and read', async () => {
    fx = queueFixture();
    const worker = await fx.worker();
    const { runId } = await fx.runs.start({
      agent: 'queue-agent',
      threadId: 'w',
      input: '!stream 40 50',
      principal: P,
    });
    const events$ = fx.runs.events(runId, { principal: P });
    await firstOf(events$, 'text_delta');
    const channel = `${fx.prefix}:${fx.queue}:lc:w:${worker.id}`;
    const wake = JSON.stringify({ wake: runId });
    const WAKES = 200;
    const flood = Promise.all(Array.from({ length: WAKES }, () => fx!.redis.publish(channel, wake)));
    const steered = await fx.runs.steer(runId, 'exactly-once', P);
    await flood;
    const events = await allEvents(events$);
    const injected = events.filter((e) => e.type === 'user_message_injected' && e.content === 'exactly-once').length;
    const end = events.at(-1)!;
    const seen = end.type === 'run_completed' ? String(end.output).split('exactly-once').length - 1 : -1;
    console.log(`one steer beside ${WAKES} wake-ups: injected ${injected} time(s), the model saw it ${seen} time(s)`);
    expect(events.filter((e) => e.type === 'user_message_injected').map((e) => e.id)).toContain(steered.id);
    expect(injected).toBe(1);
    expect(seen).toBe(1);
  }, 60_000);
});
