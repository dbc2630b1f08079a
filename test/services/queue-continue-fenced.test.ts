/**
 * Journal writes fenced per claim with real worker processes, Redis and Postgres sessions (docs/scale-out.md,
 * "Continuing a lost run"; docs/sessions.md, "Claims"). The first worker freezes while turn 3 is under way (it
 * SIGSTOPs itself just before it sends the turn's journalled response); the peer declares it lost, fences its
 * claim (commit and journal) and continues the run from turn 2. Let run again (SIGCONT), the frozen worker's
 * late journal write is refused and stores nothing: one terminal, and the history of an uninterrupted run.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { isTerminalEvent, type Item } from '../../src/index.js';
import type { PostgresSessionStore } from '../../src/postgres/index.js';
import { postgresFixture } from './support/postgres.js';
import { allEvents, gapless, queueFixture, sleep, type QueueFixture, type WorkerProcess } from './support/queue.js';

const P = 'alice';
const pg = postgresFixture();
let fx: QueueFixture | undefined;
let frozen: WorkerProcess | undefined;
afterEach(async () => {
  if (frozen?.child.exitCode === null) frozen.child.kill('SIGCONT');
  await fx?.cleanup();
  fx = frozen = undefined;
});

const until = async (check: () => boolean, ms = 15_000) => {
  for (const end = Date.now() + ms; !check() && Date.now() < end;) await sleep(20);
  return check();
};

/** Lines `<kind> <runId> …` a worker printed. */
const lines = (w: WorkerProcess, kind: string, runId: string) =>
  w
    .out()
    .split('\n')
    .filter((l) => l.startsWith(`${kind} ${runId} `));

/** Executions of each tool call of `runId`, summed over the workers (`exec <runId> <callId>` lines). */
function executions(workers: readonly WorkerProcess[], runId: string): number[] {
  const counts = new Map<string, number>();
  for (const w of workers) {
    for (const m of w.out().matchAll(/^exec (\S+) (\S+)$/gm)) {
      if (m[1] === runId) counts.set(m[2]!, (counts.get(m[2]!) ?? 0) + 1);
    }
  }
  return [...counts.values()];
}

/** A thread's history as words to compare (ids left out). */
async function history(store: PostgresSessionStore, thread: string): Promise<string[]> {
  const items = (await store.session(`${P}/${thread}`).load()) as readonly Item[];
  return items.map((item) => {
    if (item.type === 'user') return `user ${item.text}`;
    if (item.type === 'assistant') {
      return `assistant ${item.text} ${item.toolCalls.map((c) => `${c.callId}(${c.arguments})`).join(',')}`;
    }
    if (item.type === 'tool_result') return `result ${item.callId} ${item.output}`;
    return item.type;
  });
}

describe("queueRuns onWorkerLost 'continue': a frozen worker's late journal write is refused", () => {
  it('SIGSTOP in turn 3, the peer continues, SIGCONT: the late write is refused, one terminal, the baseline history', async () => {
    const store = await pg.makeStore();
    fx = queueFixture({ sessions: store });
    const settings = { pgSchema: store.schema, onWorkerLost: 'continue' as const, journalStopTurn: 3 };
    const w1 = await fx.worker(settings);
    frozen = w1;
    const input = '!steps 5 100';
    // The same scripted model, uninterrupted (a thread the hook leaves alone): the history to end with.
    const base = await fx.runs.start({ agent: 'queue-agent', threadId: 'base', input, principal: P });
    expect((await allEvents(fx.runs.events(base.runId, { principal: P }))).at(-1)?.type).toBe('run_completed');

    const { runId } = await fx.runs.start({ agent: 'queue-agent', threadId: 'frozen', input, principal: P });
    const delivered = allEvents(fx.runs.events(runId, { principal: P }));
    expect(await until(() => lines(w1, 'journal-stop', runId).length > 0)).toBe(true); // frozen in turn 3
    const w2 = await fx.worker(settings);
    const events = await delivered; // the peer declared w1 lost and continued the run to its end
    w1.child.kill('SIGCONT');
    const refusedSeen = await until(() => lines(w1, 'journal-refused', runId).length > 0);
    await until(() => lines(w1, 'note ended', runId).length > 0, 5000);
    await sleep(500); // anything the woken worker would still write
    const stored = await allEvents(fx.runs.events(runId, { principal: P }));

    const refused = [w1, w2].flatMap((w) => lines(w, 'journal-refused', runId));
    const storedByClaim = (claim: string) =>
      [w1, w2].flatMap((w) => lines(w, 'journal-stored', runId)).filter((l) => l.endsWith(` ${claim}`)).length;
    const terminals = stored.filter(isTerminalEvent);
    const resumed = stored.flatMap((e) => (e.type === 'run_resumed' ? [e.fromTurn] : []));
    const ended = lines(w1, 'note ended', runId).map((l) => l.split(' ')[3]);
    const counts = executions([w1, w2], runId);
    const [mine, baseline] = [await history(store, 'frozen'), await history(store, 'base')];
    console.log(
      `continue fenced (SIGSTOP in turn 3, SIGCONT after the peer ended the run): refused journal writes ` +
        `${refused.length} (${refused.map((l) => l.split(' ').slice(2).join(' ')).join('; ')}); journal writes ` +
        `stored by claim 1 ${storedByClaim('1')}, by claim 2 ${storedByClaim('2')}; terminals stored ` +
        `${terminals.length} (${terminals.map((t) => t.type).join(',')}); run_resumed fromTurn ${resumed.join(',')}; ` +
        `the frozen claim ended ${ended.join(',')}; events delivered ${events.length}, stored ${stored.length}; ` +
        `executions per call ${JSON.stringify(counts)}; history ${mine.length} Items, baseline ${baseline.length}`,
    );

    expect(refusedSeen).toBe(true);
    expect(refused).toEqual([`journal-refused ${runId} response-3 1`]);
    // Claim 1: turns 1 and 2, and their responses (turn 2 is journalled at turn 3's entry, before the freeze).
    expect(storedByClaim('1')).toBe(4);
    // Claim 2 from turn 3 on: turns 3 to 5 and their responses (turn 6, the answer, is in its commit).
    expect(storedByClaim('2')).toBe(6);
    // The woken claim's run ends there without writing: by the refused write (session_error), or by its
    // watchdog's cancel when that came first (its claim is gone); either way nothing of it is stored.
    expect(ended).toHaveLength(1);
    expect(['session_error', 'cancelled']).toContain(ended[0]);
    expect(terminals.map((t) => t.type)).toEqual(['run_completed']);
    expect(stored.map((e) => e.seq)).toEqual(events.map((e) => e.seq));
    expect(gapless(stored)).toBe(true);
    expect(resumed).toEqual([2]);
    expect(counts.length).toBe(5);
    expect(counts.every((n) => n === 1)).toBe(true);
    expect(mine).toEqual(baseline);
    expect(await store.session(`${P}/frozen`).journalledRuns()).not.toContain(runId);
  }, 40_000);
});
