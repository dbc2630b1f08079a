/**
 * Approvals across processes (docs/scale-out.md; docs/run-control.md, "Approvals"): a run on a worker process
 * waits at `approval`; `queueRuns.decide` on the API process reaches the worker's run handle. Approve → the
 * tool runs and the model reads its result; reject → `tool_call_failed` (`ToolCallRejectedError`) and the model
 * reads the reason; a call that is not awaiting approval, or a queued run, answers false. Real Redis, a real
 * worker child process, a queue and key prefix of its own.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigurationError, type Item, type RunEvent } from '../../src/index.js';
import { allEvents, firstOf, queueFixture, type QueueFixture } from './support/queue.js';

const P = 'alice';
const user = (id: string, text: string): Item => ({ type: 'user', id, text });

let fx: QueueFixture | undefined;
afterEach(async () => {
  await fx?.cleanup();
  fx = undefined;
});

/** A run of `!approve` on a worker, up to its `tool_approval_requested`. */
async function awaitingApproval() {
  fx = queueFixture();
  await fx.worker();
  const { runId } = await fx.runs.start({
    agent: 'queue-agent',
    threadId: 't',
    input: [user('u', '!approve')],
    principal: P,
  });
  const requested = (await firstOf(fx.runs.events(runId, { principal: P }), 'tool_approval_requested')) as Extract<
    RunEvent,
    { type: 'tool_approval_requested' }
  >;
  return { fx, runId, callId: requested.callId };
}

describe('queueRuns.decide: approvals decided from another process', () => {
  it('approve: the worker runs the call and the model reads its result', async () => {
    const { fx, runId, callId } = await awaitingApproval();
    expect(await fx.runs.decide(runId, callId, { approve: true }, P)).toBe(true);
    // decided once: a second decision finds nothing awaiting
    expect(await fx.runs.decide(runId, callId, { approve: true }, P)).toBe(false);
    const events = await allEvents(fx.runs.events(runId, { principal: P }));
    expect(events.map((e) => e.type)).toContain('tool_call_completed');
    expect(events.at(-1)).toMatchObject({ type: 'run_completed', output: 'done: guarded ran [seen: ]' });
  }, 60_000);

  it('reject: tool_call_failed with ToolCallRejectedError, and the model reads the reason', async () => {
    const { fx, runId, callId } = await awaitingApproval();
    expect(await fx.runs.decide(runId, callId, { approve: false, reason: 'not today' }, P)).toBe(true);
    const events = await allEvents(fx.runs.events(runId, { principal: P }));
    const failed = events.find((e) => e.type === 'tool_call_failed');
    expect(failed).toMatchObject({ callId, error: { name: 'ToolCallRejectedError' } });
    expect(events.some((e) => e.type === 'tool_call_started')).toBe(false);
    const end = events.at(-1)!;
    expect(end.type).toBe('run_completed');
    expect((end as { output: string }).output).toMatch(/^done: .*not today/);
  }, 60_000);

  it('an unknown call id answers false, a bad decision is a ConfigurationError naming the field', async () => {
    const { fx, runId, callId } = await awaitingApproval();
    expect(await fx.runs.decide(runId, 'no-such-call', { approve: true }, P)).toBe(false);
    await expect(fx.runs.decide(runId, callId, { approve: false } as never, P)).rejects.toThrow(ConfigurationError);
    await expect(fx.runs.decide(runId, '', { approve: true }, P)).rejects.toThrow(/callId/);
    expect(await fx.runs.cancel(runId, 'done here', P)).toBe(true);
  }, 60_000);
});
