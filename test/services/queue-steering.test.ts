/**
 * loopctl/bullmq steering across processes: into a queued run (the thread's Redis list), into a live run (the
 * worker's in-memory mailbox, by request/response), withdraw, the 2 s unavailable path (a stopped worker),
 * steering delivered exactly once, and give-back on cancel to the next run.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { MailboxUnavailableError, RunNotLiveError, type RunEvent } from '../../src/index.js';
import { allEvents, firstOf, queueFixture, type QueueFixture } from './support/queue.js';

const P = 'alice';
let fx: QueueFixture | undefined;
afterEach(async () => {
  await fx?.cleanup();
  fx = undefined;
});

const injected = (events: readonly RunEvent[]) =>
  events.flatMap((e) => (e.type === 'user_message_injected' ? [e.content] : []));
const output = (events: readonly RunEvent[]) => {
  const last = events.at(-1)!;
  return last.type === 'run_completed' ? last.output : '';
};

describe('queueRuns steering across processes', () => {
  it('steering a queued run waits in the thread list and reaches the run when a worker takes it', async () => {
    fx = queueFixture();
    const { runId } = await fx.runs.start({ agent: 'queue-agent', threadId: 't', input: '!turns 1 50', principal: P });
    const again = await fx.runs.start({ agent: 'queue-agent', threadId: 't', input: 'focus on 5xx', principal: P });
    expect(again.runId).toBe(runId);
    const { id } = await fx.runs.steer(runId, 'and be brief', P);
    await fx.worker();
    const events = await allEvents(fx.runs.events(runId, { principal: P }));
    expect(injected(events)).toEqual(['focus on 5xx', 'and be brief']);
    expect(events.find((e) => e.type === 'user_message_injected' && e.content === 'and be brief')).toMatchObject({
      id,
    });
    expect(output(events)).toContain('[seen: focus on 5xx|and be brief]');
  }, 60_000);

  it('steering a live run goes to the worker and is injected exactly once; withdraw before the next turn', async () => {
    fx = queueFixture();
    await fx.worker();
    const { runId } = await fx.runs.start({ agent: 'queue-agent', threadId: 't', input: '!turns 3 600', principal: P });
    await firstOf(fx.runs.events(runId, { principal: P }), 'tool_call_started');
    const kept = await fx.runs.steer(runId, 'keep me', P);
    const gone = await fx.runs.steer(runId, 'withdraw me', P);
    expect(await fx.runs.withdraw(runId, gone.id, P)).toBe(true);
    expect(await fx.runs.withdraw(runId, gone.id, P)).toBe(false);
    const events = await allEvents(fx.runs.events(runId, { principal: P }));
    expect(injected(events)).toEqual(['keep me']);
    expect(events.find((e) => e.type === 'user_message_injected')).toMatchObject({ id: kept.id });
    expect(output(events)).toContain('[seen: keep me]');
    // Held by the run, then delivered: withdrawing now says false; steering an ended run is RunNotLiveError.
    expect(await fx.runs.withdraw(runId, kept.id, P)).toBe(false);
    await expect(fx.runs.steer(runId, 'late', P)).rejects.toBeInstanceOf(RunNotLiveError);
  }, 60_000);

  it('a worker that does not answer within 2 s: MailboxUnavailableError, never a guessed answer; its run goes on when it wakes', async () => {
    fx = queueFixture({ steerTimeoutMs: 2000 }); // the default
    // A lock of 10 s: a 2 s freeze stays inside the worker's liveness window (it self-cancels only after 2/3 of
    // its lock without a stored heartbeat), so the run goes on when the worker wakes.
    const worker = await fx.worker({ lockDurationMs: 10_000 });
    const { runId } = await fx.runs.start({ agent: 'queue-agent', threadId: 't', input: '!tool 4000', principal: P });
    await firstOf(fx.runs.events(runId, { principal: P }), 'tool_call_started');
    worker.child.kill('SIGSTOP');
    try {
      const began = Date.now();
      await expect(fx.runs.steer(runId, 'anyone?', P)).rejects.toBeInstanceOf(MailboxUnavailableError);
      expect(Date.now() - began).toBeGreaterThanOrEqual(1900);
      await expect(fx.runs.withdraw(runId, 'some-id', P)).rejects.toMatchObject({ code: 'mailbox_unavailable' });
    } finally {
      worker.child.kill('SIGCONT');
    }
    const events = await allEvents(fx.runs.events(runId, { principal: P }));
    expect(events.at(-1)!.type).toBe('run_completed');
    // The outcome was unknown to the caller: the stored steer is applied if the worker reads it before the run
    // ends, else it is dropped with the run (docs/scale-out.md). Never twice.
    const landed = events.flatMap((e) => (e.type === 'user_message_injected' ? [e.content] : []));
    console.log(`steering sent while the worker was frozen: delivered ${landed.length} time(s) once it woke`);
    expect(landed.length).toBeLessThanOrEqual(1);
  }, 60_000);

  it('cancel gives held and queued steering back to the front; the next run gets each exactly once', async () => {
    fx = queueFixture();
    await fx.worker();
    const { runId } = await fx.runs.start({ agent: 'queue-agent', threadId: 't', input: '!turns 5 700', principal: P });
    const events$ = fx.runs.events(runId, { principal: P });
    await firstOf(events$, 'tool_call_started');
    await fx.runs.steer(runId, 'first', P); // taken at turn 2: held
    await firstOf(events$, 'user_message_injected');
    await fx.runs.steer(runId, 'second', P); // still queued at the cancel
    expect(await fx.runs.cancel(runId, 'stop', P)).toBe(true);
    const events = await allEvents(events$);
    const terminal = events.at(-1)!;
    expect(terminal).toMatchObject({ type: 'run_cancelled' });
    expect(terminal.type === 'run_cancelled' && terminal.undelivered.map((u) => u.content)).toEqual([
      'first',
      'second',
    ]);
    const next = await fx.runs.start({ agent: 'queue-agent', threadId: 't', input: 'go on', principal: P });
    const after = await allEvents(fx.runs.events(next.runId, { principal: P }));
    expect(injected(after)).toEqual(['first', 'second']);
    expect(output(after)).toContain('[seen: first|second|go on]'); // the engine's order, as in one process
  }, 60_000);
});
