/**
 * `onWorkerLost: 'continue'`, the worker running a 10-turn run SIGKILLed at each checkpoint (docs/scale-out.md,
 * "What survives which crash"): mid-stream, before and after a turn's journal write, before and after the final
 * commit. Each kill is deterministic: the run's fault is armed in a folder the worker processes read
 * (./support/faults.ts) and the worker that reaches the checkpoint kills itself there. Each case checks one
 * terminal, the history of an uninterrupted run of the same scripted model (less the interrupted results), tool
 * executions <= 1 per call, and prints its counts.
 */
import { describe, expect, it } from 'vitest';
import { checkpointsFixture, P } from './support/checkpoints.js';
import { sleep } from './support/queue.js';

/** 10 tool turns (`step-1`…`step-10`, 60 ms each) and an 11th that answers, each streamed as 3 deltas first. */
const cp = checkpointsFixture('!steps 10 60 3');

describe("queueRuns onWorkerLost 'continue': a SIGKILL at each checkpoint of a 10-turn run", () => {
  it('mid-stream in turn 5 (deltas out, no response journalled): continued from turn 4, its model call made again', async () => {
    const o = await cp.faulted('stream', [{ at: 'stream', turn: 5 }]);
    const resumedAt = o.events.findIndex((e) => e.type === 'run_resumed');
    const deltasOut = o.events.slice(0, resumedAt).filter((e) => e.type === 'text_delta' && e.turn === 5).length;
    console.log(`SIGKILL mid-stream in turn 5 (${deltasOut} of its deltas out): ${o.line}`);
    await cp.expectOneCompletedRun(o, 'stream');
    expect(deltasOut).toBeGreaterThanOrEqual(1);
    expect(o.fromTurns).toEqual([4]);
    expect(o.modelCalls.get('5')).toBe(2);
    expect([...o.modelCalls].every(([turn, n]) => turn === '5' || n === 1)).toBe(true);
    expect(o.interrupted.size).toBe(0);
  }, 30_000);

  it('before the journal write of turn 5 is sent: continued from turn 4, turn 5 from its journalled response', async () => {
    const o = await cp.faulted('journal-before', [{ at: 'journal-before', turn: 5 }]);
    console.log(`SIGKILL before turn 5 is journalled: ${o.line}`);
    await cp.expectOneCompletedRun(o, 'journal-before');
    expect(o.fromTurns).toEqual([4]);
    // Its response was journalled before its call ran: the model is not asked again; the call had run (its
    // result not journalled): interrupted, not run again.
    expect([...o.modelCalls.values()].every((n) => n === 1)).toBe(true);
    expect(o.executions.get('step-5')).toBe(1);
    expect([...o.interrupted]).toEqual(['step-5']);
  }, 30_000);

  it('after the journal write of turn 5 stored: continued from turn 5, nothing doubled', async () => {
    const o = await cp.faulted('journal-after', [{ at: 'journal-after', turn: 5 }]);
    console.log(`SIGKILL after turn 5 is journalled: ${o.line}`);
    await cp.expectOneCompletedRun(o, 'journal-after');
    expect(o.fromTurns).toEqual([5]);
    expect([...o.modelCalls.values()].every((n) => n === 1)).toBe(true);
    expect(o.interrupted.size).toBe(0);
  }, 30_000);

  it('before the final commit is sent: continued from turn 10, the answer asked again, committed once', async () => {
    const o = await cp.faulted('commit-before', [{ at: 'commit-before' }]);
    console.log(`SIGKILL before the commit is sent: ${o.line}`);
    await cp.expectOneCompletedRun(o, 'commit-before');
    expect(o.fromTurns).toEqual([10]);
    expect(o.modelCalls.get('11')).toBe(2);
    expect(o.interrupted.size).toBe(0);
  }, 30_000);

  it('after the final commit stored: not continued, its run_completed stored once, by the peer', async () => {
    const o = await cp.faulted('commit-after', [{ at: 'commit-after' }]);
    console.log(`SIGKILL after the commit stored: ${o.line}`);
    await cp.expectOneCompletedRun(o, 'commit-after');
    expect(o.fromTurns).toEqual([]);
    expect([...o.modelCalls.values()].every((n) => n === 1)).toBe(true);
    // The commit decided the outcome: the answer is the committed one.
    expect(o.terminals[0]).toMatchObject({ type: 'run_completed', output: 'done [seen: ]' });
    // Nothing left to continue from.
    expect((await cp.store().session(`${P}/commit-after`).readJournal(o.runId)).turns).toEqual([]);
  }, 30_000);

  it('after its terminal stored, before its journal is discarded: the peer that takes the stalled job discards it', async () => {
    const o = await cp.faulted('discard', [{ at: 'discard-before' }]);
    const journalled = () => cp.store().session(`${P}/discard`).journalledRuns();
    // The dead worker's job stalls: a peer takes it once its lock lapsed (about 2 s + the stalled check's 1 s).
    let waited = 0;
    for (; waited < 150 && (await journalled()).includes(o.runId); waited++) await sleep(100);
    const left = (await journalled()).includes(o.runId);
    console.log(
      `SIGKILL after the terminal stored, before the journal discard: ${o.line}; ` +
        `journal left behind: ${left ? 'yes' : 'no'} (waited ${waited * 100} ms more for its discard)`,
    );
    await cp.expectOneCompletedRun(o, 'discard');
    expect(o.fromTurns).toEqual([]);
    expect([...o.modelCalls.values()].every((n) => n === 1)).toBe(true);
  }, 40_000);
});
