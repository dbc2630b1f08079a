/**
 * Fencing with real worker processes and Postgres sessions (docs/scale-out.md, "Fencing"). Each claim of a run
 * has a token; a peer that declares a claim lost releases its session lease and fences off its session commit
 * (`Session.fenceRun`) first. A worker frozen just before its commit (it SIGSTOPs itself there) and let run
 * again after a peer declared it lost stores nothing: not its commit, not its events, not its terminal; with
 * `retry_once` the rerun (which need not wait for the lost worker's lease) commits once.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { isTerminalEvent, type Item } from '../../src/index.js';
import type { PostgresSessionStore } from '../../src/postgres/index.js';
import { postgresFixture } from './support/postgres.js';
import { allEvents, queueFixture, sleep, type QueueFixture, type WorkerProcess } from './support/queue.js';

const P = 'alice';
const pg = postgresFixture();
let fx: QueueFixture | undefined;
let stopped: WorkerProcess | undefined;
afterEach(async () => {
  if (stopped?.child.exitCode === null) stopped.child.kill('SIGCONT');
  await fx?.cleanup();
  fx = stopped = undefined;
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

const until = async (check: () => boolean, ms = 10_000) => {
  for (const end = Date.now() + ms; !check() && Date.now() < end;) await sleep(20);
  return check();
};

const threadItems = async (store: PostgresSessionStore, thread: string): Promise<readonly Item[]> =>
  (await store.session(`${P}/${thread}`).load()) as readonly Item[];
const answers = (items: readonly Item[]) =>
  items.filter((i) => i.type === 'assistant' && i.text.startsWith('done')).length;
const userTexts = (items: readonly Item[], text: string) =>
  items.filter((i) => i.type === 'user' && i.text === text).length;

describe('queue fencing: a lost claim writes nothing once a peer declared it lost', () => {
  it("'fail', the worker frozen before its commit: declared lost, its commit afterwards stores nothing", async () => {
    const store = await pg.makeStore();
    fx = queueFixture({ sessions: store });
    const w1 = await fx.worker({ pgSchema: store.schema, commitHook: 'stop-before' });
    stopped = w1;
    const { runId } = await fx.runs.start({ agent: 'queue-agent', threadId: 't', input: '!tool 200', principal: P });
    const delivered = allEvents(fx.runs.events(runId, { principal: P }));
    expect(await until(() => w1.out().includes(`commit ${runId}`))).toBe(true); // frozen at its commit
    const w2 = await fx.worker({ pgSchema: store.schema });
    const events = await delivered;
    w1.child.kill('SIGCONT');
    const resumed = await until(() => w1.out().includes(`committed ${runId}`));
    await sleep(500);
    const stored = await allEvents(fx.runs.events(runId, { principal: P }));
    const items = await threadItems(store, 't');
    const terminals = stored.filter(isTerminalEvent);
    console.log(
      `fencing (frozen before commit, fail): terminals stored ${terminals.length} ` +
        `(${terminals.map((t) => t.stopReason).join(',')}), delivered ${events.filter(isTerminalEvent).length}; ` +
        `the lost claim's commit sent after the fence: ${resumed}; items of the run in the session ${items.length}; ` +
        `executions per call per claim ${JSON.stringify(executions([w1, w2], runId))}`,
    );
    expect(resumed).toBe(true);
    expect(terminals).toHaveLength(1);
    expect(terminals[0]).toMatchObject({ type: 'run_failed', stopReason: 'worker_lost' });
    expect(stored).toHaveLength(events.length);
    expect(items).toEqual([]); // session and terminal agree: nothing was committed
    expect(executions([w1, w2], runId)).toEqual([1]);
  }, 60_000);

  it("retry_once, the first worker frozen before its commit: the rerun's commit alone is stored", async () => {
    const store = await pg.makeStore();
    fx = queueFixture({ sessions: store });
    const settings = { pgSchema: store.schema, onWorkerLost: 'retry_once' as const };
    const w1 = await fx.worker({ ...settings, commitHook: 'stop-before' });
    stopped = w1;
    const { runId } = await fx.runs.start({ agent: 'queue-agent', threadId: 't', input: '!tool 200', principal: P });
    const events$ = fx.runs.events(runId, { principal: P });
    const delivered = allEvents(events$);
    expect(await until(() => w1.out().includes(`commit ${runId}`))).toBe(true); // frozen at its commit
    const w2 = await fx.worker(settings);
    const events = await delivered;
    // Let the frozen worker go on: its commit stores nothing, its terminal and events are refused.
    w1.child.kill('SIGCONT');
    const resumed = await until(() => w1.out().includes(`committed ${runId}`));
    await sleep(500);
    const stored = await allEvents(fx.runs.events(runId, { principal: P }));
    const items = await threadItems(store, 't');
    const terminals = stored.filter(isTerminalEvent);
    const counts = executions([w1, w2], runId);
    console.log(
      `fencing (frozen before commit, retry_once): terminals stored ${terminals.length} ` +
        `(${terminals.map((t) => t.type).join(',')}), delivered ${events.filter(isTerminalEvent).length}; ` +
        `the lost claim's commit sent after the fence: ${resumed}; the run's input in the session ` +
        `${userTexts(items, '!tool 200')}x, assistant answers ${answers(items)}; ` +
        `executions per call per claim ${JSON.stringify(counts)}`,
    );
    expect(resumed).toBe(true);
    expect(terminals).toHaveLength(1);
    expect(terminals[0]).toMatchObject({ type: 'run_completed', output: expect.stringContaining('done') });
    expect(stored).toHaveLength(events.length);
    // Session and terminal agree: the rerun's commit, once; nothing of the lost claim's.
    expect(userTexts(items, '!tool 200')).toBe(1);
    expect(answers(items)).toBe(1);
    expect(counts.every((n) => n === 1)).toBe(true);
  }, 60_000);
});
