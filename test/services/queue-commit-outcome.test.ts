/**
 * "The commit decides the outcome" with real worker processes and Postgres sessions (docs/scale-out.md,
 * "Fencing"): a peer that declares a worker lost fences off its session commit first (`Session.fenceRun`), and
 * finds it stored when it was:
 * - a worker that dies just after its commit stored (it SIGKILLs itself there) has its run reported completed,
 *   and the steering the commit delivered is not given back;
 * - a commit whose connection drops — terminated by Postgres before it stored, or its answer lost after — is sent
 *   again and the run completes.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { isTerminalEvent, type Item } from '../../src/index.js';
import type { PostgresSessionStore } from '../../src/postgres/index.js';
import { postgresFixture } from './support/postgres.js';
import { allEvents, firstOf, queueFixture, type QueueFixture, type WorkerProcess } from './support/queue.js';

const P = 'alice';
const pg = postgresFixture();
let fx: QueueFixture | undefined;
afterEach(async () => {
  await fx?.cleanup();
  fx = undefined;
});

/** Executions per tool call per worker process (`exec <runId> <callId>` lines). */
function executions(workers: readonly WorkerProcess[], runId: string): number[] {
  return workers.flatMap((w) => {
    const counts = new Map<string, number>();
    for (const m of w.out().matchAll(/^exec (\S+) (\S+)$/gm)) {
      if (m[1] === runId) counts.set(m[2]!, (counts.get(m[2]!) ?? 0) + 1);
    }
    return [...counts.values()];
  });
}

const threadItems = async (store: PostgresSessionStore, thread: string): Promise<readonly Item[]> =>
  (await store.session(`${P}/${thread}`).load()) as readonly Item[];
const userTexts = (items: readonly Item[], text: string) =>
  items.filter((i) => i.type === 'user' && i.text === text).length;

describe('queue fencing: the commit decides the outcome', () => {
  it('a worker killed just after its commit stored: the run is completed and its steering stays delivered', async () => {
    const store = await pg.makeStore();
    fx = queueFixture({ sessions: store });
    const w1 = await fx.worker({ pgSchema: store.schema, commitHook: 'kill-after' });
    const { runId } = await fx.runs.start({ agent: 'queue-agent', threadId: 't', input: '!tool 1500', principal: P });
    const events$ = fx.runs.events(runId, { principal: P });
    const delivered = allEvents(events$);
    await firstOf(events$, 'tool_call_started');
    await fx.runs.steer(runId, 'steer once', P);
    const w2 = await fx.worker({ pgSchema: store.schema });
    expect(await w1.exited).toBe('SIGKILL');
    const events = await delivered;
    const terminals = events.filter(isTerminalEvent);
    const next = await fx.runs.start({ agent: 'queue-agent', threadId: 't', input: 'again', principal: P });
    const after = await allEvents(fx.runs.events(next.runId, { principal: P }));
    const items = await threadItems(store, 't');
    const injectedAgain = after.filter((e) => e.type === 'user_message_injected').length;
    console.log(
      `commit decides (killed after commit): terminals delivered ${terminals.length} ` +
        `(${terminals.map((t) => `${t.type}/${t.stopReason}`).join(',')}); steering in the session ` +
        `${userTexts(items, 'steer once')}x, delivered again to the next run ${injectedAgain}x; ` +
        `executions per call per claim ${JSON.stringify(executions([w1, w2], runId))}`,
    );
    expect(terminals).toHaveLength(1);
    expect(terminals[0]).toMatchObject({ type: 'run_completed', stopReason: 'completed' });
    expect(terminals[0]!.type === 'run_completed' && terminals[0].output).toContain('[seen: steer once]');
    expect(terminals[0]!.type === 'run_completed' && terminals[0].undelivered).toEqual([]);
    expect(userTexts(items, 'steer once')).toBe(1);
    expect(injectedAgain).toBe(0);
    expect(after.at(-1)).toMatchObject({ type: 'run_completed' });
  }, 60_000);

  it('a commit whose connection drops, before it stored (pg_terminate_backend) or after: sent again, completed', async () => {
    const store = await pg.makeStore();
    fx = queueFixture({ sessions: store });
    const w = await fx.worker({ pgSchema: store.schema, commitHook: 'connection-faults' });
    const threads = ['terminate', 'lose'];
    const runIds = await Promise.all(
      threads.map(
        async (threadId) =>
          (await fx!.runs.start({ agent: 'queue-agent', threadId, input: 'hello', principal: P })).runId,
      ),
    );
    const terminals = await Promise.all(
      runIds.map(async (id) => (await allEvents(fx!.runs.events(id, { principal: P }))).filter(isTerminalEvent)),
    );
    const stored = await Promise.all(threads.map(async (t) => userTexts(await threadItems(store, t), 'hello')));
    console.log(
      `commit connection faults (terminated before it stored, answer lost after): ` +
        `${w.out().includes('terminated') ? 'terminated' : 'NOT terminated'}; terminals per run ` +
        `${terminals.map((t) => `${t.length} ${t.map((e) => `${e.type}/${e.stopReason}`).join(',')}`).join('; ')}; ` +
        `the run's input in each session ${stored.join(',')}x`,
    );
    expect(w.out()).toContain(`terminated ${P}/terminate`);
    for (const t of terminals) {
      expect(t).toHaveLength(1);
      expect(t[0]).toMatchObject({ type: 'run_completed', stopReason: 'completed' });
    }
    expect(stored).toEqual([1, 1]);
  }, 60_000);
});
