/**
 * A continue refused before it started leaves the run's journal alone (docs/sessions.md, "Continuing a run"): a
 * `resumeRun` on a run that is still live (its session lease held, or its session in use in this process), or the
 * loser of two continues racing, fails `configuration_error` and discards nothing, so the live run (or the winner)
 * still has its journal. Only a continue that held the lease and then was cancelled or failed discards it.
 */
import { NEVER, VirtualAction, VirtualTimeScheduler } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  CancelSignal,
  MemorySession,
  defineAgent,
  resumeRun,
  run,
  tool,
  type RunEvent,
  type Session,
} from '../src/index.js';
import { scriptedModel, sequentialIds, type ScriptedStep } from '../src/testing/index.js';

/** A handle of its own over `inner`, its lease included (as another process would open the same stored session). */
const handleOn = (inner: MemorySession): Session => ({
  load: () => inner.load(),
  append: (items, options) => inner.append(items, options),
  journalTurn: (runId, turn, items, options) => inner.journalTurn(runId, turn, items, options),
  readJournal: (runId) => inner.readJournal(runId),
  discardJournal: (runId) => inner.discardJournal(runId),
  journalledRuns: () => inner.journalledRuns(),
  acquire: (runId, options) => inner.acquire(runId, options),
});

const forever = { firstEventMs: false, requestMs: false, runMs: false } as const;

function setup() {
  // Held leases renew forever: each flush runs what is due in the first 5 virtual seconds, no further.
  const scheduler = new VirtualTimeScheduler(VirtualAction, 5_000);
  const step = tool({ name: 'step', description: '', parameters: z.object({ n: z.number() }), execute: () => 'ok' });
  const turn = (n: number): ScriptedStep => ({ toolCalls: [{ name: 'step', arguments: { n } }] });
  const agentWith = (steps: (ScriptedStep | string)[]) =>
    defineAgent({ name: 'durable', instructions: '', model: scriptedModel(steps, { scheduler }), tools: [step] });
  const inner = new MemorySession();
  return { scheduler, turn, agentWith, inner };
}

function collect(events$: { subscribe: (f: (e: RunEvent) => void) => unknown }): RunEvent[] {
  const out: RunEvent[] = [];
  events$.subscribe((e) => out.push(e));
  return out;
}

const turnsOf = (inner: MemorySession, runId: string) => inner.readJournal(runId).turns.map((t) => t.turn);

describe('resumeRun refused before it started: the journal is left alone', () => {
  it('a continue refused by the live run’s lease fails configuration_error and keeps the live run’s journal', async () => {
    const { scheduler, turn, agentWith, inner } = setup();
    const live = collect(
      run(agentWith([turn(1), turn(2), { hold: NEVER }]), 'task', {
        session: handleOn(inner),
        scheduler,
        idGenerator: sequentialIds(),
        deadlines: forever,
      }),
    );
    scheduler.flush();
    expect(live.at(-1)?.type).toBe('model_request_started');
    expect(turnsOf(inner, 'run-1')).toEqual([1, 2]);

    const handle = await resumeRun(agentWith(['x']), 'run-1', { session: handleOn(inner), scheduler });
    const events = collect(handle.events$);
    scheduler.flush();
    await expect(handle.result).rejects.toMatchObject({ stopReason: 'configuration_error' });
    expect(events.at(-1)).toMatchObject({ type: 'run_failed', stopReason: 'configuration_error' });
    expect(turnsOf(inner, 'run-1')).toEqual([1, 2]);
    expect(inner.journalledRuns()).toEqual(['run-1']);
  });

  it('a continue refused because its session object is in use by the live run keeps that run’s journal', async () => {
    const { scheduler, turn, agentWith, inner } = setup();
    const session = handleOn(inner);
    collect(
      run(agentWith([turn(1), turn(2), { hold: NEVER }]), 'task', {
        session,
        scheduler,
        idGenerator: sequentialIds(),
        deadlines: forever,
      }),
    );
    scheduler.flush();
    const handle = await resumeRun(agentWith(['x']), 'run-1', { session, scheduler });
    scheduler.flush();
    await expect(handle.result).rejects.toMatchObject({ stopReason: 'configuration_error' });
    expect(turnsOf(inner, 'run-1')).toEqual([1, 2]);
  });

  it('of two continues racing, the loser discards nothing: the winner, still running, keeps its journal', async () => {
    const { scheduler, turn, agentWith, inner } = setup();
    // The lost process: turns 1 and 2 journalled, then it is gone (it held no lease; its journal is kept).
    collect(
      run(agentWith([turn(1), turn(2), { hold: NEVER }]), 'task', {
        session: { ...handleOn(inner), acquire: undefined },
        scheduler,
        idGenerator: sequentialIds(),
        deadlines: forever,
      }),
    );
    scheduler.flush();
    const winner = await resumeRun(agentWith([{ hold: NEVER }]), 'run-1', {
      session: handleOn(inner),
      scheduler,
      deadlines: forever,
    });
    const loser = await resumeRun(agentWith(['x']), 'run-1', { session: handleOn(inner), scheduler });
    const loserEvents = collect(loser.events$);
    const winnerEvents = collect(winner.events$);
    scheduler.flush();
    expect(loserEvents.at(-1)).toMatchObject({ type: 'run_failed', stopReason: 'configuration_error' });
    expect(winnerEvents.map((e) => e.type)).toEqual([
      'run_started',
      'run_resumed',
      'turn_started',
      'model_request_started',
    ]);
    expect(turnsOf(inner, 'run-1')).toEqual([1, 2]);
    expect(inner.journalledRuns()).toEqual(['run-1']);
  });

  it('a continue that held the lease and then was cancelled discards the journal, as any run', async () => {
    const { scheduler, turn, agentWith, inner } = setup();
    collect(
      run(agentWith([turn(1), { hold: NEVER }]), 'task', {
        session: { ...handleOn(inner), acquire: undefined },
        scheduler,
        idGenerator: sequentialIds(),
        deadlines: forever,
      }),
    );
    scheduler.flush();
    expect(turnsOf(inner, 'run-1')).toEqual([1]);
    const cancel = new CancelSignal();
    const handle = await resumeRun(agentWith([{ hold: NEVER }]), 'run-1', {
      session: handleOn(inner),
      scheduler,
      cancel,
      deadlines: forever,
    });
    const events = collect(handle.events$);
    scheduler.flush();
    expect(events.at(-1)?.type).toBe('model_request_started');
    cancel.cancel();
    scheduler.flush();
    await expect(handle.result).rejects.toMatchObject({ stopReason: 'cancelled' });
    await Promise.resolve();
    expect(inner.readJournal('run-1').turns).toEqual([]);
    expect(inner.journalledRuns()).toEqual([]);
  });
});
