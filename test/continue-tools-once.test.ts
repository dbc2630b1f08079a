/**
 * No tool runs twice across a continue (docs/sessions.md, "No tool runs twice"): with a journalling session that has
 * `journalResponse` and `recordCallStart`, a turn's model response is journalled before its tools run and each call's
 * start is recorded under (runId, callId). A process death is simulated at each kill point deterministically: a tool
 * or a store call that never returns in the first run (never cancelled, so nothing discards its journal), then
 * `resumeRun` with a fresh agent on the same stored session. On Memory and on SQLite (two stores on one file).
 */
import path from 'node:path';
import { NEVER } from 'rxjs';
import { afterAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  MemorySession,
  defineAgent,
  resumeRun,
  run,
  tool,
  type Item,
  type RunEvent,
  type RunJournal,
  type Session,
  type ToolResultItem,
} from '../src/index.js';
import { SqliteSessionStore } from '../src/sqlite/index.js';
import { scriptedModel, sequentialIds, type ScriptedStep } from '../src/testing/index.js';
import { tempDirs } from './support/session-stores.js';

const dirs = tempDirs('loopctl-continue-once-');
afterAll(() => dirs.removeAll());

const forever = { firstEventMs: false, requestMs: false, runMs: false } as const;

/** The session of the process that died, and that of the one that restarted, on one stored session. */
interface Stores {
  readonly name: string;
  open(): { dead: Session; restarted: Session; close(): Promise<void> };
}

/** A view without `acquire` (a dead process's lease would be taken over at once). */
const view = (s: Session, overrides: Partial<Session> = {}): Session => ({
  load: () => s.load(),
  append: (items, o) => s.append(items, o),
  journalTurn: (r, t, items, o) => s.journalTurn!(r, t, items, o),
  journalResponse: (r, t, items, o) => s.journalResponse!(r, t, items, o),
  readJournal: (r) => s.readJournal!(r),
  discardJournal: (r) => s.discardJournal!(r),
  recordCallStart: (a, b) => s.recordCallStart!(a, b),
  ...overrides,
});

const memory: Stores = {
  name: 'Memory',
  open() {
    const inner = new MemorySession();
    return { dead: inner, restarted: inner, close: async () => undefined };
  },
};

const sqlite: Stores = {
  name: 'SQLite',
  open() {
    const file = path.join(dirs.make(), 'sessions.db');
    const a = new SqliteSessionStore(file);
    const b = new SqliteSessionStore(file);
    return {
      dead: a.session('s'),
      restarted: b.session('s'),
      close: async () => {
        await a.close();
        await b.close();
      },
    };
  },
};

/** Waits (no timer: event-loop turns) until `done` holds. */
async function until(done: () => boolean | Promise<boolean>): Promise<void> {
  for (let i = 0; i < 2000; i++) {
    if (await done()) return;
    await new Promise((resolve) => setImmediate(resolve));
  }
  throw new Error('the first run never reached its kill point');
}

function setup(idempotent: boolean) {
  /** Per call id: the attempts `act` saw, across both processes. */
  const attempts = new Map<string, number[]>();
  const step = tool({ name: 'step', description: '', parameters: z.object({}), execute: () => 'stepped' });
  /** `act` as a process has it: `hangs` never returns (the process dies while it runs). */
  const act = (hangs: boolean) =>
    tool({
      name: 'act',
      description: '',
      parameters: z.object({}),
      idempotent,
      execute: (_args, ctx) => {
        attempts.set(ctx.callId, [...(attempts.get(ctx.callId) ?? []), ctx.attempt]);
        return hangs ? NEVER : 'acted';
      },
    });
  const agentWith = (steps: (ScriptedStep | string)[], hangs = false) =>
    defineAgent({ name: 'durable', instructions: '', model: scriptedModel(steps), tools: [step, act(hangs)] });
  const executions = (): number => [...attempts.values()].reduce((n, a) => n + a.length, 0);
  return { attempts, agentWith, executions };
}

const STEP: ScriptedStep = { toolCalls: [{ name: 'step', arguments: {} }] };
const ACT: ScriptedStep = { toolCalls: [{ name: 'act', arguments: {} }] };

async function continueRun(agent: ReturnType<ReturnType<typeof setup>['agentWith']>, session: Session) {
  const handle = await resumeRun(agent, 'run-1', { session });
  const events: RunEvent[] = [];
  handle.events$.subscribe((e) => events.push(e));
  const result = await handle.result;
  if (process.env.DBG) console.log(events.map((e) => e.type + ':' + e.turn).join(' '));
  return { events, result };
}

const readJournal = async (s: Session): Promise<RunJournal> => s.readJournal!('run-1') as Promise<RunJournal>;

const resultOf = (items: readonly Item[], name: string): ToolResultItem | undefined => {
  const call = items.flatMap((i) => (i.type === 'assistant' ? i.toolCalls : [])).find((c) => c.name === name);
  return items.find((i): i is ToolResultItem => i.type === 'tool_result' && i.callId === call?.callId);
};
const count = (events: readonly RunEvent[], type: RunEvent['type']): number =>
  events.filter((e) => e.type === type).length;

describe.each([memory, sqlite])('a continue runs no tool twice ($name)', (stores) => {
  it('mid-tool, not idempotent: the call is not run again; the model reads that its effects are unknown', async () => {
    const { dead, restarted, close } = stores.open();
    const { attempts, agentWith, executions } = setup(false);
    const lost = run(agentWith([STEP, ACT], true), 'task', {
      session: view(dead),
      idGenerator: sequentialIds(),
      deadlines: forever,
    }).subscribe();
    await until(() => executions() === 1);
    const journal = await readJournal(restarted);
    expect(journal.turns.map((t) => t.turn)).toEqual([1]);
    expect(journal.pending?.turn).toBe(2);

    const { events, result } = await continueRun(agentWith(['done']), view(restarted));
    expect(events.slice(0, 3).map((e) => [e.type, e.turn])).toEqual([
      ['run_started', 0],
      ['run_resumed', 1],
      ['turn_started', 2],
    ]);
    expect(count(events, 'model_request_started')).toBe(1); // turn 3's only: turn 2's response was reused
    expect(events.find((e) => e.type === 'tool_call_failed')).toMatchObject({
      name: 'act',
      error: { name: 'ToolCallOutcomeUnknownError' },
    });
    expect(result.output).toBe('done');
    const interrupted = resultOf(result.items, 'act');
    expect(interrupted).toMatchObject({ isError: true, interrupted: true });
    expect(String(interrupted?.output)).toContain('the worker stopped while this call ran; its effects are unknown');
    expect(await restarted.load()).toEqual(result.items);
    expect([...attempts.values()]).toEqual([[1]]);
    console.log(`${stores.name} mid-tool: act executions ${executions()}, terminals 1, model requests 1`);
    lost.unsubscribe();
    await close();
  });

  it('mid-tool, idempotent: the call runs again with the same call id and ctx.attempt 2', async () => {
    const { dead, restarted, close } = stores.open();
    const { attempts, agentWith, executions } = setup(true);
    const lost = run(agentWith([STEP, ACT], true), 'task', {
      session: view(dead),
      idGenerator: sequentialIds(),
      deadlines: forever,
    }).subscribe();
    await until(() => executions() === 1);
    const { events, result } = await continueRun(agentWith(['done']), view(restarted));
    expect(count(events, 'model_request_started')).toBe(1);
    expect(result.output).toBe('done');
    expect(resultOf(result.items, 'act')).toMatchObject({ output: 'acted' });
    const [[callId, seen]] = [...attempts];
    expect(seen).toEqual([1, 2]);
    expect(resultOf(result.items, 'act')?.callId).toBe(callId);
    console.log(`${stores.name} mid-tool idempotent: act executions ${executions()} (attempts ${seen!.join(',')})`);
    lost.unsubscribe();
    await close();
  });

  it('mid-tool, idempotent, dying again in its first continue: ctx.attempt counts every continue (1, 2, 3)', async () => {
    const { dead, restarted, close } = stores.open();
    const { attempts, agentWith, executions } = setup(true);
    const lost = run(agentWith([STEP, ACT], true), 'task', {
      session: view(dead),
      idGenerator: sequentialIds(),
      deadlines: forever,
    }).subscribe();
    await until(() => executions() === 1);
    // The first continue dies in the call too (its re-run hangs); the second finishes it.
    const second = await resumeRun(agentWith(['never asked'], true), 'run-1', { session: view(restarted) });
    const secondRun = second.events$.subscribe();
    await until(() => executions() === 2);
    const { events, result } = await continueRun(agentWith(['done']), view(restarted));
    expect(count(events, 'model_request_started')).toBe(1);
    expect(result.output).toBe('done');
    const [[callId, seen]] = [...attempts];
    expect(seen).toEqual([1, 2, 3]);
    expect(resultOf(result.items, 'act')).toMatchObject({ callId, output: 'acted' });
    console.log(
      `${stores.name} mid-tool idempotent, 3 continues: act executions ${executions()} (attempts ${seen!.join(',')})`,
    );
    secondRun.unsubscribe();
    lost.unsubscribe();
    await close();
  });

  it('after the response journal, before any tool: the response is reused and its call runs once', async () => {
    const { dead, restarted, close } = stores.open();
    const { attempts, agentWith, executions } = setup(false);
    let recording = false;
    // The store's record of the start never answers: the process died before the tool started.
    const stuck = view(dead, { recordCallStart: (a, b) => (recording ? NEVER : dead.recordCallStart!(a, b)) });
    const lost = run(agentWith([STEP, ACT], true), 'task', {
      session: stuck,
      idGenerator: sequentialIds(),
      deadlines: forever,
    }).subscribe((e) => {
      if (e.type === 'turn_completed') recording = true; // turn 1's call records; turn 2's never answers
    });
    await until(async () => (await readJournal(restarted)).pending?.turn === 2);
    expect(executions()).toBe(0);
    const { events, result } = await continueRun(agentWith(['done']), view(restarted));
    expect(count(events, 'model_request_started')).toBe(1);
    expect(resultOf(result.items, 'act')).toMatchObject({ output: 'acted' });
    expect([...attempts.values()]).toEqual([[1]]);
    console.log(`${stores.name} before any tool: act executions ${executions()}, terminals 1`);
    lost.unsubscribe();
    await close();
  });

  it('mid-tool in the first turn: the run is continued from turn 0, its response reused', async () => {
    const { dead, restarted, close } = stores.open();
    const { attempts, agentWith, executions } = setup(false);
    const lost = run(agentWith([ACT], true), 'task', {
      session: view(dead),
      idGenerator: sequentialIds(),
      deadlines: forever,
    }).subscribe();
    await until(() => executions() === 1);
    const { events, result } = await continueRun(agentWith(['done']), view(restarted));
    expect(events[1]).toMatchObject({ type: 'run_resumed', fromTurn: 0 });
    expect(events[2]).toMatchObject({ type: 'turn_started', turn: 1 });
    expect(result.output).toBe('done');
    expect(result.items[0]).toMatchObject({ type: 'user', text: 'task' });
    expect(resultOf(result.items, 'act')).toMatchObject({ interrupted: true });
    expect([...attempts.values()]).toEqual([[1]]);
    console.log(`${stores.name} mid-tool in turn 1: act executions ${executions()}, terminals 1`);
    lost.unsubscribe();
    await close();
  });

  it('between turns: the next turn is asked of the model again; every call ran once', async () => {
    const { dead, restarted, close } = stores.open();
    const { attempts, agentWith, executions } = setup(false);
    const lost = run(agentWith([ACT, { hold: NEVER }]), 'task', {
      session: view(dead),
      idGenerator: sequentialIds(),
      deadlines: forever,
    }).subscribe();
    await until(async () => (await readJournal(restarted)).turns.length === 1);
    const journal = await readJournal(restarted);
    expect(journal.pending).toBeUndefined(); // turn 1's response entry is past: turn 1 is journalled whole
    const { events, result } = await continueRun(agentWith([ACT, 'done']), view(restarted));
    expect(events[1]).toMatchObject({ type: 'run_resumed', fromTurn: 1 });
    expect(count(events, 'model_request_started')).toBe(2);
    expect(result.output).toBe('done');
    expect([...attempts.values()]).toEqual([[1], [1]]);
    console.log(`${stores.name} between turns: act executions ${executions()} over 2 calls, terminals 1`);
    lost.unsubscribe();
    await close();
  });
});

describe('the idempotent tool option', () => {
  it('is a boolean: anything else is refused naming tool.idempotent', () => {
    const define = (idempotent: unknown) => () =>
      tool({
        name: 't',
        description: '',
        parameters: z.object({}),
        idempotent: idempotent as boolean,
        execute: () => 1,
      });
    expect(define('yes')).toThrow(expect.objectContaining({ name: 'ConfigurationError', field: 'tool.idempotent' }));
    expect(define(true)().idempotent).toBe(true);
    expect(define(undefined)().idempotent).toBeUndefined();
  });
});

describe('a continue and a call awaiting approval', () => {
  it('the call stays pending: it waits for its decision again and runs once when approved', async () => {
    const inner = new MemorySession();
    let executions = 0;
    const guarded = tool({
      name: 'guarded',
      description: '',
      parameters: z.object({}),
      needsApproval: true,
      execute: () => (executions++, 'ran'),
    });
    const CALL: ScriptedStep = { toolCalls: [{ name: 'guarded', arguments: {} }] };
    const agentWith = (steps: (ScriptedStep | string)[]) =>
      defineAgent({ name: 'durable', instructions: '', model: scriptedModel(steps), tools: [guarded] });
    const requested: string[] = [];
    // The first process waits for the decision and dies before it comes.
    const lost = run(agentWith([CALL]), 'task', {
      session: view(inner),
      idGenerator: sequentialIds(),
      deadlines: forever,
    }).subscribe((e) => {
      if (e.type === 'tool_approval_requested') requested.push(e.callId);
    });
    await until(() => requested.length === 1);
    const handle = await resumeRun(agentWith(['done']), 'run-1', { session: view(inner) });
    handle.events$.subscribe((e) => {
      if (e.type === 'tool_approval_requested') {
        requested.push(e.callId);
        handle.approve(e.callId);
      }
    });
    const result = await handle.result;
    expect(requested).toEqual([requested[0], requested[0]]); // asked again, for the same call
    expect(executions).toBe(1);
    expect(resultOf(result.items, 'guarded')).toMatchObject({ output: 'ran' });
    console.log(`approval across a continue: requested ${requested.length}, executions ${executions}`);
    lost.unsubscribe();
  });
});
