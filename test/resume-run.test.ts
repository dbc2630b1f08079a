/**
 * `resumeRun(agent, runId)` continues a run whose process died from its last journalled turn (docs/sessions.md,
 * "Durable runs"): same run id, `run_resumed` with the turn it goes on from, then the next turn; the commit holds the
 * whole run once and seals the journal; steering a journalled turn injected is not delivered again, steering still
 * queued is. A process death is simulated by a first run left hanging forever (never cancelled: nothing discards its
 * journal) on a handle of its own over the same stored session.
 */
import { NEVER, VirtualTimeScheduler } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  Mailbox,
  MemorySession,
  ResumeError,
  defineAgent,
  resumeRun,
  run,
  tool,
  type Item,
  type RunEvent,
  type Session,
} from '../src/index.js';
import { scriptedModel, sequentialIds, type ScriptedStep } from '../src/testing/index.js';

/** A handle of its own over `inner` (as another process would open the same stored session). */
const handleOn = (inner: MemorySession): Session => ({
  load: () => inner.load(),
  append: (items, options) => inner.append(items, options),
  journalTurn: (runId, turn, items, options) => inner.journalTurn(runId, turn, items, options),
  readJournal: (runId) => inner.readJournal(runId),
  discardJournal: (runId) => inner.discardJournal(runId),
});

const texts = (items: readonly Item[]): string[] =>
  items.map((i) => (i.type === 'tool_result' ? `result ${i.output}` : i.type === 'summary' ? i.text : i.text));

function setup() {
  const scheduler = new VirtualTimeScheduler();
  const executions = new Map<string, number>();
  const step = tool({
    name: 'step',
    description: '',
    parameters: z.object({ n: z.number() }),
    execute: ({ n }, ctx) => {
      executions.set(ctx.callId, (executions.get(ctx.callId) ?? 0) + 1);
      return `did ${n}`;
    },
  });
  const turn = (n: number): ScriptedStep => ({ toolCalls: [{ name: 'step', arguments: { n } }] });
  const agentWith = (steps: (ScriptedStep | string)[]) =>
    defineAgent({ name: 'durable', instructions: '', model: scriptedModel(steps, { scheduler }), tools: [step] });
  return { scheduler, executions, turn, agentWith };
}

/** A lost process's run waits forever for its model: no deadline ends it. */
const forever = { firstEventMs: false, requestMs: false, runMs: false } as const;

function collect(events$: { subscribe: (f: (e: RunEvent) => void) => unknown }): RunEvent[] {
  const out: RunEvent[] = [];
  events$.subscribe((e) => out.push(e));
  return out;
}

describe('resumeRun: a run continued from its last journalled turn', () => {
  it('goes on after the last journalled turn with the same run id; the commit holds the whole run once', async () => {
    const { scheduler, executions, turn, agentWith } = setup();
    const inner = new MemorySession();
    // The first process: turns 1 to 3 complete, turn 4's model call never answers, then the process is gone.
    const lost = agentWith([turn(1), turn(2), turn(3), { hold: NEVER }]);
    const first = collect(
      run(lost, 'task', { session: handleOn(inner), scheduler, idGenerator: sequentialIds(), deadlines: forever }),
    );
    scheduler.flush();
    expect(first.at(-1)?.type).toBe('model_request_started');
    expect(inner.readJournal('run-1').turns.map((t) => t.turn)).toEqual([1, 2, 3]);
    expect(inner.items).toEqual([]);

    // The restarted process: the same scripted model from turn 4 on.
    const again = agentWith([turn(4), 'done']);
    const handle = await resumeRun(again, 'run-1', { session: handleOn(inner), scheduler });
    const events = collect(handle.events$);
    scheduler.flush();
    const result = await handle.result;
    expect(events.slice(0, 3).map((e) => [e.type, e.runId, e.turn])).toEqual([
      ['run_started', 'run-1', 0],
      ['run_resumed', 'run-1', 3],
      ['turn_started', 'run-1', 4],
    ]);
    expect(events[1]).toMatchObject({ type: 'run_resumed', fromTurn: 3 });
    expect(events.at(-1)).toMatchObject({ type: 'run_completed', runId: 'run-1', turn: 5, output: 'done' });
    expect(texts(inner.items)).toEqual([
      'task',
      '',
      'result did 1',
      '',
      'result did 2',
      '',
      'result did 3',
      '',
      'result did 4',
      'done',
    ]);
    expect(result.items).toEqual(inner.items);
    expect(inner.writes).toBe(1);
    expect(inner.readJournal('run-1')).toEqual({ sealed: true, turns: [] });
    const counts = [...executions.values()];
    expect(counts).toEqual([1, 1, 1, 1]);
    console.log(`resumeRun: executions per call ${counts.join(',')}, terminals 1, commits ${inner.writes}`);
  });

  it('steering a journalled turn injected is not delivered again; steering still queued is, once', async () => {
    const { scheduler, turn, agentWith } = setup();
    const inner = new MemorySession();
    const ids = () => {
      let n = 0;
      return () => `steer-${++n}`;
    };
    // The first process: "S", queued before it, is injected in turn 1 (journalled at turn 2's entry).
    const mailbox1 = new Mailbox({ idGenerator: ids() });
    mailbox1.push('S');
    const lost = agentWith([turn(1), turn(2), { hold: NEVER }]);
    const first = collect(
      run(lost, 'task', {
        session: handleOn(inner),
        mailbox: mailbox1,
        scheduler,
        idGenerator: sequentialIds(),
        deadlines: forever,
      }),
    );
    scheduler.flush();
    expect(first.filter((e) => e.type === 'user_message_injected').map((e) => e.turn)).toEqual([1]);
    const runId = 'run-1';
    expect(inner.readJournal(runId).turns.map((t) => t.turn)).toEqual([1, 2]);
    // A durable mailbox after the restart still holds "S" (its delivery was never recorded) and "T".
    const mailbox2 = new Mailbox({ idGenerator: ids() });
    mailbox2.push('S');
    mailbox2.push('T');
    const handle = await resumeRun(agentWith([turn(3), 'done']), runId, {
      session: handleOn(inner),
      mailbox: mailbox2,
      scheduler,
    });
    const events = collect(handle.events$);
    scheduler.flush();
    await handle.result;
    const injected = events.filter((e) => e.type === 'user_message_injected').map((e) => e.content);
    expect(injected).toEqual(['T']);
    const delivered = inner.items.filter((i) => i.type === 'user').map((i) => i.text);
    expect(delivered).toEqual(['S', 'task', 'T']); // queued before the run: just before its input ("arrival order")
    expect(mailbox2.size).toBe(0);
    const times = (text: string): number => delivered.filter((t) => t === text).length;
    console.log(`resumeRun steering: S delivered ${times('S')}, T delivered ${times('T')}`);
  });

  it('a committed run, a run with no journalled turn and a session without a journal are refused; nothing runs', async () => {
    const { scheduler, agentWith } = setup();
    const inner = new MemorySession();
    collect(run(agentWith(['done']), 'task', { session: handleOn(inner), scheduler, idGenerator: sequentialIds() }));
    scheduler.flush();
    const agent = agentWith(['never']);
    const committed = await resumeRun(agent, 'run-1', { session: handleOn(inner) }).catch((e: unknown) => e);
    expect(committed).toBeInstanceOf(ResumeError);
    expect((committed as ResumeError).code).toBe('committed');
    const never = await resumeRun(agent, 'run-9', { session: handleOn(inner) }).catch((e: unknown) => e);
    expect((never as ResumeError).code).toBe('not_journalled');
    const plain: Session = { load: () => [], append: () => undefined };
    const noJournal = await resumeRun(agent, 'run-1', { session: plain }).catch((e: unknown) => e);
    expect(noJournal).toMatchObject({ name: 'ConfigurationError', field: 'options.session' });
    const badId = await resumeRun(agent, '', { session: handleOn(inner) }).catch((e: unknown) => e);
    expect(badId).toMatchObject({ name: 'ConfigurationError', field: 'runId' });
    expect(inner.writes).toBe(1);
  });

  it('a journal with a missing turn (1, then 3) is refused as tampered, naming the gap; nothing runs, nothing is dropped', async () => {
    const inner = new MemorySession();
    inner.journalTurn('run-7', 1, [{ type: 'user', id: 'u1', text: 'task' }]);
    inner.journalTurn('run-7', 3, [{ type: 'assistant', id: 'a3', text: 'third', toolCalls: [] }]);
    const { agentWith } = setup();
    const refused = await resumeRun(agentWith(['never']), 'run-7', { session: handleOn(inner) }).catch(
      (e: unknown) => e,
    );
    expect(refused).toBeInstanceOf(ResumeError);
    expect((refused as ResumeError).code).toBe('tampered');
    expect((refused as Error).message).toBe(
      "tampered: run run-7's journal has turn 3 after turn 1 (turn 2 is missing): it cannot be continued as it is; " +
        'discardJournal removes it',
    );
    expect(inner.readJournal('run-7').turns.map((t) => t.turn)).toEqual([1, 3]);
    expect(inner.writes).toBe(0);
  });
});
