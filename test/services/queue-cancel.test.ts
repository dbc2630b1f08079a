/**
 * loopctl/bullmq across processes: runs started by queueRuns in this process, run by worker child processes;
 * cancel from here while the worker streams, runs a tool, sleeps in backoff, and while the run is queued.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { isTerminalEvent } from '../../src/index.js';
import {
  allEvents,
  expandSeqs,
  firstOf,
  gapless,
  queueFixture,
  sleep,
  textOf,
  type QueueFixture,
} from './support/queue.js';

const P = 'alice';
let fx: QueueFixture | undefined;
afterEach(async () => {
  await fx?.cleanup();
  fx = undefined;
});

describe('queueRuns + startWorker: cancel across processes', () => {
  it('a run completes on a worker; its events read from here, resumable after a seq', async () => {
    fx = queueFixture();
    await fx.worker();
    const { runId } = await fx.runs.start({ agent: 'queue-agent', threadId: 't1', input: '!stream 5 0', principal: P });
    const events = await allEvents(fx.runs.events(runId, { principal: P }));
    expect(gapless(events)).toBe(true);
    expect(textOf(events)).toBe('w0 w1 w2 w3 w4 ');
    expect(events[0]!.type).toBe('run_started');
    expect(events.at(-1)).toMatchObject({ type: 'run_completed', output: expect.stringContaining('streamed') });
    expect(events.filter(isTerminalEvent)).toHaveLength(1);
    // Finished: its stream was trimmed (text deltas of one attempt as one); resuming inside them cuts there.
    const stored = () => fx!.redis.xlen(`${fx!.prefix}:${fx!.queue}:lc:run:${runId}:events`);
    for (let i = 0; i < 40 && (await stored()) === events.length; i++) await sleep(50); // trimmed just after
    expect(await stored()).toBe(events.length - 4); // 5 deltas kept as 1
    const delta = expandSeqs(events.filter((e) => e.type === 'text_delta'));
    const resumed = await allEvents(fx.runs.events(runId, { principal: P, afterSeq: delta[1]! }));
    expect(gapless(resumed, delta[1]! + 1)).toBe(true);
    expect(textOf(resumed)).toBe('w2 w3 w4 ');
    await expect(allEvents(fx.runs.events(runId, { principal: 'bob' }))).rejects.toThrow(/no run/);
  }, 60_000);

  it('cancel while the worker streams: run_cancelled with the caller reason and phase', async () => {
    fx = queueFixture();
    await fx.worker();
    const { runId } = await fx.runs.start({
      agent: 'queue-agent',
      threadId: 't1',
      input: '!stream 1000 20',
      principal: P,
    });
    await firstOf(fx.runs.events(runId, { principal: P }), 'text_delta');
    expect(await fx.runs.cancel(runId, { why: 'user' }, P)).toBe(true);
    const events = await allEvents(fx.runs.events(runId, { principal: P }));
    const terminal = events.at(-1)!;
    expect(terminal).toMatchObject({ type: 'run_cancelled', reason: { why: 'user' }, phase: 'model_stream' });
    expect(events.filter(isTerminalEvent)).toHaveLength(1);
    expect(await fx.runs.cancel(runId, 'again', P)).toBe(false);
  }, 60_000);

  it('cancel while the worker runs a tool: phase tool_call', async () => {
    fx = queueFixture();
    await fx.worker();
    const { runId } = await fx.runs.start({ agent: 'queue-agent', threadId: 't1', input: '!tool 30000', principal: P });
    await firstOf(fx.runs.events(runId, { principal: P }), 'tool_call_started');
    expect(await fx.runs.cancel(runId, 'stop', P)).toBe(true);
    const events = await allEvents(fx.runs.events(runId, { principal: P }));
    expect(events.at(-1)).toMatchObject({ type: 'run_cancelled', reason: 'stop', phase: 'tool_call' });
  }, 60_000);

  it('cancel while the worker sleeps in backoff: phase backoff', async () => {
    fx = queueFixture();
    await fx.worker();
    const { runId } = await fx.runs.start({
      agent: 'queue-agent',
      threadId: 't1',
      input: '!backoff 30000',
      principal: P,
    });
    await firstOf(fx.runs.events(runId, { principal: P }), 'retry_scheduled');
    expect(await fx.runs.cancel(runId, 'stop', P)).toBe(true);
    const events = await allEvents(fx.runs.events(runId, { principal: P }));
    expect(events.at(-1)).toMatchObject({ type: 'run_cancelled', reason: 'stop', phase: 'backoff' });
  }, 60_000);

  it('stop (graceful, run control) is asked of the worker: it ends the run at the turn end where the engine has it', async () => {
    fx = queueFixture();
    await fx.worker();
    const { runId } = await fx.runs.start({ agent: 'queue-agent', threadId: 't1', input: '!tool 1500', principal: P });
    await expect(fx.runs.stop(runId, { at: 'later' as never }, P)).rejects.toMatchObject({ field: 'at' });
    await firstOf(fx.runs.events(runId, { principal: P }), 'tool_call_started');
    const stopped = fx.runs.stop(runId, { at: 'turn_end', graceMs: 30_000 }, P).then(
      (value) => ({ value }),
      (error: { code?: string }) => ({ error }),
    );
    const events = await allEvents(fx.runs.events(runId, { principal: P }));
    const terminal = events.at(-1)!;
    const outcome = await stopped;
    if (!('error' in outcome) || outcome.error.code !== 'not_implemented') {
      // Run control in this build: the tool call finishes, the turn ends, the run completes as stopped.
      expect(outcome).toEqual({ value: true });
      expect(terminal).toMatchObject({ type: 'run_completed', stopReason: 'stopped' });
    } else {
      expect(terminal).toMatchObject({ type: 'run_completed', stopReason: 'completed' }); // not stopped: it went on
    }
    expect(await fx.runs.stop(runId, { at: 'turn_end' }, P)).toBe(false); // ended
  }, 60_000);

  it('cancel while queued: run_started, run_cancelled{turn_entry}, written here; no worker ever runs it', async () => {
    fx = queueFixture();
    const { runId } = await fx.runs.start({ agent: 'queue-agent', threadId: 't1', input: '!stream 3 0', principal: P });
    expect(await fx.runs.cancel(runId, 'never mind', P)).toBe(true);
    const events = await allEvents(fx.runs.events(runId, { principal: P }));
    expect(events.map((e) => [e.type, e.seq])).toEqual([
      ['run_started', 0],
      ['run_cancelled', 1],
    ]);
    expect(events[1]).toMatchObject({ phase: 'turn_entry', reason: 'never mind', partial: [] });
    await fx.worker(); // a worker that comes later finds no job, and nothing more is written
    await sleep(500);
    expect(await allEvents(fx.runs.events(runId, { principal: P }))).toHaveLength(2);
    // The thread is free: the next run starts and completes.
    const next = await fx.runs.start({ agent: 'queue-agent', threadId: 't1', input: 'hello', principal: P });
    const after = await allEvents(fx.runs.events(next.runId, { principal: P }));
    expect(after.at(-1)).toMatchObject({ type: 'run_completed' });
  }, 60_000);
});
