/**
 * A run on a session that keeps a journal (docs/sessions.md, "Durable runs") journals each turn it completes at the
 * next turn's entry, sealed by its commit; a cancelled or failed run discards it (the history unchanged), and a
 * cancel during a journal write leaves the turn before as the last journalled one.
 */
import { VirtualTimeScheduler } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  MemorySession,
  defineAgent,
  run,
  tool,
  type Item,
  type JournalOptions,
  type RunEvent,
  type Session,
} from '../src/index.js';
import { scriptedModel, sequentialIds } from '../src/testing/index.js';

function collectNow(events$: ReturnType<typeof run>): RunEvent[] {
  const out: RunEvent[] = [];
  events$.subscribe((e) => out.push(e));
  return out;
}

const ids = (items: readonly Item[]): string[] =>
  items.map((i) => (i.type === 'tool_result' ? `result:${i.callId}` : i.id));

/** A MemorySession whose journal writes are recorded and, from write number `holdFrom` on, held until `land()`. */
function journalSpy(holdFrom = Infinity) {
  const inner = new MemorySession();
  const writes: { turn: number; ids: string[] }[] = [];
  const landers: (() => void)[] = [];
  const session: Session = {
    load: () => inner.load(),
    append: (items, options) => inner.append(items, options),
    journalTurn: (runId: string, turn: number, items: readonly Item[], options?: JournalOptions) => {
      writes.push({ turn, ids: ids(items) });
      if (writes.length < holdFrom) return inner.journalTurn(runId, turn, items, options);
      return new Promise<void>((resolve) => landers.push(() => (inner.journalTurn(runId, turn, items), resolve())));
    },
    readJournal: (runId) => inner.readJournal(runId),
    discardJournal: (runId) => inner.discardJournal(runId),
  };
  return { inner, session, writes, land: () => landers.shift()?.() };
}

const echo = tool({ name: 'echo', description: '', parameters: z.object({}), execute: () => 'echoed' });

function agentOf(steps: Parameters<typeof scriptedModel>[0], scheduler: VirtualTimeScheduler) {
  return defineAgent({ name: 'j', instructions: '', model: scriptedModel(steps, { scheduler }), tools: [echo] });
}

const toolTurn = { toolCalls: [{ name: 'echo' }] };

describe('the run journal, engine side', () => {
  it("each completed turn is journalled at the next turn's entry with the Items it added; the commit seals it", () => {
    const scheduler = new VirtualTimeScheduler();
    const { inner, session, writes } = journalSpy();
    const agent = agentOf([toolTurn, toolTurn, 'done'], scheduler);
    const events = collectNow(run(agent, 'task', { session, scheduler, idGenerator: sequentialIds() }));
    scheduler.flush();
    expect(events.at(-1)).toMatchObject({ type: 'run_completed', stopReason: 'completed', turn: 3 });
    // Turn 1: the input, the call and its result; turn 2: its call and result; turn 3 is the commit's.
    expect(writes).toEqual([
      { turn: 1, ids: ['item-1', 'item-2', 'result:call_1_1'] },
      { turn: 2, ids: ['item-3', 'result:call_2_1'] },
    ]);
    expect(inner.readJournal('run-1')).toEqual({ sealed: true, turns: [] });
    expect(inner.items.length).toBe(6);
    expect(inner.writes).toBe(1);
  });

  it('a cancelled run discards its journal; the history stays as it was', () => {
    const scheduler = new VirtualTimeScheduler();
    const { inner, session, writes } = journalSpy();
    const agent = agentOf([toolTurn, toolTurn, { text: 'never', delayMs: 100 }], scheduler);
    const events = collectNow(
      run(agent, 'task', { session, scheduler, idGenerator: sequentialIds(), deadlines: { runMs: 50 } }),
    );
    scheduler.flush();
    expect(events.at(-1)).toMatchObject({ type: 'run_cancelled', turn: 3 });
    expect(writes.map((w) => w.turn)).toEqual([1, 2]);
    expect(inner.readJournal('run-1')).toEqual({ sealed: false, turns: [] });
    expect(inner.items).toEqual([]);
  });

  it('a run a guardrail ends discards its journal; the history stays as it was', () => {
    const scheduler = new VirtualTimeScheduler();
    const { inner, session, writes } = journalSpy();
    // Turn 1's call passes; turn 2's call trips a tool guardrail that ends the run.
    let checks = 0;
    const agent = defineAgent({
      name: 'j',
      instructions: '',
      model: scriptedModel([toolTurn, toolTurn, 'never'], { scheduler }),
      tools: [echo],
      guardrails: {
        tool: [{ name: 'second-call', when: 'before', onTrip: 'end_run', check: () => ({ tripwire: ++checks === 2 }) }],
      },
    });
    const events = collectNow(run(agent, 'task', { session, scheduler, idGenerator: sequentialIds() }));
    scheduler.flush();
    expect(events.at(-1)).toMatchObject({ type: 'run_failed', stopReason: 'guardrail', turn: 2 });
    expect(writes.map((w) => w.turn)).toEqual([1]);
    expect(inner.readJournal('run-1')).toEqual({ sealed: false, turns: [] });
    expect(inner.items).toEqual([]);
  });

  it('a cancel during a journal write ends the run at the turn entry, the turn before as the last journalled', async () => {
    const scheduler = new VirtualTimeScheduler();
    const { inner, session, writes, land } = journalSpy(2); // turn 2's write is held
    const agent = agentOf([toolTurn, toolTurn, 'done'], scheduler);
    const controller = new AbortController();
    const events = collectNow(
      run(agent, 'task', { session, scheduler, idGenerator: sequentialIds(), signal: controller.signal }),
    );
    scheduler.flush();
    expect(writes.map((w) => w.turn)).toEqual([1, 2]);
    expect(events.at(-1)?.type).toBe('turn_completed'); // waiting for the write, turn 3 not started
    expect(inner.readJournal('run-1').turns.map((t) => t.turn)).toEqual([1]);
    controller.abort('stop');
    expect(events.at(-1)).toMatchObject({ type: 'run_cancelled', phase: 'turn_entry', turn: 2 });
    expect(inner.readJournal('run-1').turns.map((t) => t.turn)).toEqual([1]); // the last one, for a continue
    // The held write lands after the cancel; the discard waited for it, so nothing of the run is left.
    land();
    await new Promise((resolve) => setImmediate(resolve));
    expect(inner.readJournal('run-1')).toEqual({ sealed: false, turns: [] });
    expect(inner.items).toEqual([]);
    const terminals = events.filter((e) => ['run_completed', 'run_cancelled', 'run_failed'].includes(e.type));
    console.log(
      `journal cancel: journal writes ${writes.length}, terminals ${terminals.length}, commits ${inner.writes}`,
    );
  });

  it('a session without a journal is written once, at the commit, as before', () => {
    const scheduler = new VirtualTimeScheduler();
    const inner = new MemorySession();
    const session: Session = { load: () => inner.load(), append: (items, o) => inner.append(items, o) };
    const agent = agentOf([toolTurn, 'done'], scheduler);
    const events = collectNow(run(agent, 'task', { session, scheduler }));
    scheduler.flush();
    expect(events.at(-1)).toMatchObject({ type: 'run_completed' });
    expect(inner.writes).toBe(1);
  });
});
