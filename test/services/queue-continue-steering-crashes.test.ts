/**
 * `onWorkerLost: 'continue'` (docs/scale-out.md, "What survives which crash"), the worker running a 6-turn run
 * SIGKILLed at a checkpoint (./support/faults.ts): steering across the kill (injected in a journalled turn, still
 * queued at the kill, sent while the worker is dead), a kill just after the first turn's model response is journalled,
 * mid-stream in the first turn (nothing journalled: rerun as `retry_once`), and two crashes in a row. Each case
 * checks one terminal, the history of an uninterrupted run of the same scripted model, tool executions <= 1 per
 * call, steering once, and prints its counts.
 */
import { filter, firstValueFrom, type Observable } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { queueRuns } from '../../src/bullmq/index.js';
import { MailboxUnavailableError, type RunEvent } from '../../src/index.js';
import { checkpointsFixture, P } from './support/checkpoints.js';
import { allEvents, firstOf, QUEUE_SECRET } from './support/queue.js';

const INPUT = '!steps 6 300 3';
const S1 = 'steered early';
const S2 = 'steered while the worker is dead';
const S3 = 'steered just before the kill';
const S4 = 'steered while dead, unanswered in time';
/** 6 tool turns (`step-1`…`step-6`, 300 ms each) and a 7th that answers, each streamed as 3 deltas first. */
const cp = checkpointsFixture(INPUT, [S1, S2, S3, S4]);

const startedIn = (events$: Observable<RunEvent>, turn: number) =>
  firstValueFrom(events$.pipe(filter((e) => e.type === 'tool_call_started' && e.turn === turn)));

describe("queueRuns onWorkerLost 'continue': steering, a journalled response, the first turn, two crashes", () => {
  it('steering: injected in a journalled turn is not delivered again; queued at the kill or sent after it is, once', async () => {
    const fx = cp.fx();
    // This case's baseline: the same steering, uninterrupted (the answer names what the model saw, in order).
    const base = await fx.runs.start({ agent: 'queue-agent', threadId: 'base-steer', input: INPUT, principal: P });
    const base$ = fx.runs.events(base.runId, { principal: P });
    const baseEvents = allEvents(base$);
    await firstOf(base$, 'tool_call_completed');
    await fx.runs.steer(base.runId, S1, P);
    await startedIn(base$, 4);
    await fx.runs.steer(base.runId, S3, P);
    await startedIn(base$, 5);
    await fx.runs.steer(base.runId, S4, P);
    await fx.runs.steer(base.runId, S2, P);
    expect((await baseEvents).at(-1)?.type).toBe('run_completed');

    // A process whose steering waits 500 ms for the run's worker: less than the continue takes.
    const impatient = queueRuns({
      connection: fx.url,
      queue: fx.queue,
      prefix: fx.prefix,
      steerTimeoutMs: 500,
      secret: QUEUE_SECRET,
    });
    let dead = false;
    let queuedBeforeDeath = false;
    let unanswered: unknown;
    const o = await cp.faulted('steer', [{ at: 'journal-after', turn: 4 }], async (runId, events$, died) => {
      void died.then(() => (dead = true));
      await firstOf(events$, 'tool_call_completed');
      await fx.runs.steer(runId, S1, P); // injected in turn 2, journalled at turn 3's entry
      await startedIn(events$, 4);
      // In turn 4's mailbox during its call (300 ms); turn 5's entry journals turn 4 and the worker dies, before
      // turn 5 takes it.
      await fx.runs.steer(runId, S3, P);
      queuedBeforeDeath = !dead;
      await died;
      // The run's worker is dead: S4's steer is not answered in time (its outcome unknown, the command stored);
      // S2's waits for the continued run.
      unanswered = await impatient.steer(runId, S4, P).then(
        () => undefined,
        (error: unknown) => error,
      );
      await fx.runs.steer(runId, S2, P);
    });
    await impatient.close();
    const injected = (text: string) =>
      o.events.filter((e) => e.type === 'user_message_injected' && e.content === text).length;
    const inHistory = (text: string) => o.items.filter((i) => i.type === 'user' && i.text === text).length;
    const once = (text: string) => `injected ${injected(text)}, in the history ${inHistory(text)}`;
    console.log(
      `steering around a SIGKILL after turn 4 is journalled: ${o.line}; injected in turn 2: ${once(S1)}; ` +
        `queued at the kill (${queuedBeforeDeath ? 'yes' : 'no'}): ${once(S3)}; sent while dead: ${once(S2)}; ` +
        `sent while dead, ${(unanswered as Error | undefined)?.name ?? 'answered'}: ${once(S4)}`,
    );
    expect(await cp.history('steer', o.interrupted)).toEqual(await cp.history('base-steer'));
    expect(o.terminals.map((t) => t.type)).toEqual(['run_completed']);
    expect(o.fromTurns).toEqual([4]);
    expect([...o.executions.values()].every((n) => n <= 1)).toBe(true);
    expect(queuedBeforeDeath).toBe(true);
    expect(unanswered).toBeInstanceOf(MailboxUnavailableError);
    expect([S1, S3, S4, S2].map((s) => [injected(s), inHistory(s)])).toEqual([
      [1, 1],
      [1, 1],
      [1, 1],
      [1, 1],
    ]);
    // S3, S4 and S2 were injected by the continued run, on the new worker.
    const resumedAt = o.events.findIndex((e) => e.type === 'run_resumed');
    const at = (text: string) => o.events.findIndex((e) => e.type === 'user_message_injected' && e.content === text);
    expect(at(S1)).toBeLessThan(resumedAt);
    expect(at(S3)).toBeGreaterThan(resumedAt);
    expect(at(S4)).toBeGreaterThan(resumedAt);
    expect(at(S2)).toBeGreaterThan(resumedAt);
    expect(o.terminals[0]).toMatchObject({ output: `done [seen: ${S1}|${S3}|${S4}|${S2}]` });
  }, 40_000);

  it("just after turn 1's model response is journalled (no turn completed): continued from turn 0, its call run once", async () => {
    const o = await cp.faulted('response-after', [{ at: 'response-after', turn: 1 }]);
    console.log(`SIGKILL after turn 1's response is journalled: ${o.line}`);
    await cp.expectOneCompletedRun(o, 'response-after');
    expect(o.fromTurns).toEqual([0]);
    // The model is not asked again; the call had not started: it runs on the new worker, once.
    expect([...o.modelCalls.values()].every((n) => n === 1)).toBe(true);
    expect(o.executions.get('step-1')).toBe(1);
    expect(o.interrupted.size).toBe(0);
  }, 30_000);

  it('mid-stream in turn 1 (nothing journalled): rerun from its input as retry_once does', async () => {
    const o = await cp.faulted('first-turn', [{ at: 'stream', turn: 1 }]);
    console.log(`SIGKILL mid-stream in turn 1: ${o.line}`);
    await cp.expectOneCompletedRun(o, 'first-turn');
    expect(o.fromTurns).toEqual([]);
    expect(o.modelCalls.get('1')).toBe(2);
    expect(o.interrupted.size).toBe(0);
  }, 30_000);

  it('two crashes: mid-stream in turn 2, then the continued run just after its commit stored: one run_completed', async () => {
    const o = await cp.faulted('twice', [{ at: 'stream', turn: 2 }, { at: 'commit-after' }]);
    console.log(`two crashes (mid-stream in turn 2, after the continued run's commit): ${o.line}`);
    await cp.expectOneCompletedRun(o, 'twice');
    expect(o.lost).toHaveLength(2);
    expect(o.lost[0]).not.toBe(o.lost[1]);
    expect(o.fromTurns).toEqual([1]);
    expect(o.modelCalls.get('2')).toBe(2);
    expect(o.interrupted.size).toBe(0);
    expect(o.terminals[0]).toMatchObject({ type: 'run_completed', output: 'done [seen: ]' });
  }, 40_000);
});
