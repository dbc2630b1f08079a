/**
 * resumeRun on a SQLite session (docs/sessions.md, "Durable runs"): two stores on one file stand for the process
 * that died and the one that restarted. The first run journals its completed turns through the store's async
 * writes and is left waiting forever on its model (never cancelled: nothing discards its journal; its session view
 * has no `acquire`, as a dead process's lease would be taken over at once). The second store's session lists it
 * (`journalledRuns`), continues it with the same run id, leases the session, commits the whole run once and seals.
 */
import path from 'node:path';
import { NEVER } from 'rxjs';
import { afterAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineAgent, resumeRun, run, tool, type RunEvent, type Session } from 'loopctl';
import { SqliteSessionStore } from 'loopctl/sqlite';
import { scriptedModel, sequentialIds, type ScriptedStep } from 'loopctl/testing';
import { tempDirs } from './support/session-stores.js';

const dirs = tempDirs('loopctl-resume-run-');
afterAll(() => dirs.removeAll());

const forever = { firstEventMs: false, requestMs: false, runMs: false } as const;

describe('resumeRun on a SQLite session shared by two stores (two processes)', () => {
  it('continues the run from its last journalled turn and commits it once', async () => {
    const file = path.join(dirs.make(), 'sessions.db');
    const dead = new SqliteSessionStore(file);
    const restarted = new SqliteSessionStore(file);
    const executions = new Map<string, number>();
    const step = tool({
      name: 'step',
      description: '',
      parameters: z.object({ n: z.number() }),
      execute: ({ n }, ctx) => (executions.set(ctx.callId, (executions.get(ctx.callId) ?? 0) + 1), `did ${n}`),
    });
    const turn = (n: number): ScriptedStep => ({ toolCalls: [{ name: 'step', arguments: { n } }] });
    const agentWith = (steps: (ScriptedStep | string)[]) =>
      defineAgent({ name: 'durable', instructions: '', model: scriptedModel(steps), tools: [step] });

    const s = dead.session('s');
    const view: Session = {
      load: () => s.load(),
      append: (items, o) => s.append(items, o),
      journalTurn: (r, t, items, o) => s.journalTurn(r, t, items, o),
      readJournal: (r) => s.readJournal(r),
      discardJournal: (r) => s.discardJournal(r),
    };
    const lostEvents: RunEvent[] = [];
    const lost = run(agentWith([turn(1), turn(2), { hold: NEVER }]), 'task', {
      session: view,
      idGenerator: sequentialIds(),
      deadlines: forever,
    }).subscribe((e) => lostEvents.push(e));
    const session = restarted.session('s');
    for (let i = 0; i < 1000 && (await session.readJournal('run-1')).turns.length < 2; i++) {
      await new Promise((resolve) => setImmediate(resolve));
    }
    expect(await session.journalledRuns()).toEqual(['run-1']);
    expect((await session.readJournal('run-1')).turns.map((t) => t.turn)).toEqual([1, 2]);

    const handle = await resumeRun(agentWith([turn(3), 'done']), 'run-1', { session });
    const events: RunEvent[] = [];
    handle.events$.subscribe((e) => events.push(e));
    const result = await handle.result;
    expect(events[1]).toMatchObject({ type: 'run_resumed', runId: 'run-1', fromTurn: 2 });
    expect(result.output).toBe('done');
    const stored = await session.load();
    expect(stored).toEqual(result.items);
    expect(
      stored.filter((i) => i.type === 'tool_result').map((i) => (i.type === 'tool_result' ? i.output : '')),
    ).toEqual(['did 1', 'did 2', 'did 3']);
    expect(await session.readJournal('run-1')).toEqual({ sealed: true, turns: [] });
    expect(await session.journalledRuns()).toEqual([]);
    expect([...executions.values()]).toEqual([1, 1, 1]);
    console.log(`resumeRun on SQLite: executions per call ${[...executions.values()].join(',')}, terminals 1`);
    lost.unsubscribe(); // the "dead" run: its cancel discards nothing of a sealed run
    await dead.close();
    await restarted.close();
  });
});
