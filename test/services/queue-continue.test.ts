/**
 * `onWorkerLost: 'continue'` with real worker processes, Redis and Postgres sessions (docs/scale-out.md,
 * "Continuing a lost run"): a 10-turn run whose worker is SIGKILLed in its turn 7 is continued by the other
 * worker from its last journalled turn — one terminal, one `run_resumed`, its steering delivered once, no
 * tool call run twice, and the same history as an uninterrupted run of the same scripted model.
 */
import { filter, firstValueFrom } from 'rxjs';
import { afterEach, describe, expect, it } from 'vitest';
import { isTerminalEvent, type Item, type RunEvent } from '../../src/index.js';
import type { PostgresSessionStore } from '../../src/postgres/index.js';
import { postgresFixture } from './support/postgres.js';
import {
  allEvents,
  firstOf,
  gapless,
  queueFixture,
  sleep,
  type QueueFixture,
  type WorkerProcess,
} from './support/queue.js';

const P = 'alice';
const pg = postgresFixture();
let fx: QueueFixture | undefined;
afterEach(async () => {
  await fx?.cleanup();
  fx = undefined;
});

/** Executions of each tool call of `runId`, summed over the worker processes (`exec <runId> <callId>` lines). */
function executions(workers: readonly WorkerProcess[], runId: string): Map<string, number> {
  const counts = new Map<string, number>();
  for (const w of workers) {
    for (const m of w.out().matchAll(/^exec (\S+) (\S+)$/gm)) {
      if (m[1] === runId) counts.set(m[2]!, (counts.get(m[2]!) ?? 0) + 1);
    }
  }
  return counts;
}

const STEER = 'steered once';

/**
 * True once the journal of `runId` (thread `t`) is gone, waited for up to 5 s: the worker that stores a run's
 * terminal discards its journal after the terminal stored (src/bullmq/worker-run.ts `finish`), so a reader of
 * the terminal can be first.
 */
async function journalGone(store: PostgresSessionStore, runId: string): Promise<boolean> {
  const journalled = () => store.session(`${P}/t`).journalledRuns();
  for (let i = 0; i < 50 && (await journalled()).includes(runId); i++) await sleep(100);
  return !(await journalled()).includes(runId);
}

/** A thread's history as words to compare: ids left out, the steering Item and the interrupted results too. */
async function history(store: PostgresSessionStore, thread: string, interrupted: ReadonlySet<string>) {
  const items = (await store.session(`${P}/${thread}`).load()) as readonly Item[];
  return items.flatMap((item) => {
    if (item.type === 'user') return item.text === STEER ? [] : [`user ${item.text}`];
    if (item.type === 'assistant') {
      return [`assistant ${item.text} ${item.toolCalls.map((c) => `${c.callId}(${c.arguments})`).join(',')}`];
    }
    if (item.type === 'tool_result')
      return interrupted.has(item.callId) ? [] : [`result ${item.callId} ${item.output}`];
    return [item.type];
  });
}

describe("queueRuns onWorkerLost 'continue'", () => {
  it('a 10-turn run whose worker is SIGKILLed in turn 7 goes on from its journal on the other worker', async () => {
    const store = await pg.makeStore();
    fx = queueFixture({ sessions: store });
    const settings = { pgSchema: store.schema, onWorkerLost: 'continue' as const };
    const pool = await Promise.all([1, 2].map(() => fx!.worker(settings)));

    // The same scripted model, uninterrupted: the history the continued run must end with.
    // Steered as the continued run is (the final answer names the steering the model saw).
    const input = '!steps 10 200';
    const base = await fx.runs.start({ agent: 'queue-agent', threadId: 'base', input, principal: P });
    const base$ = fx.runs.events(base.runId, { principal: P });
    const baseEvents = allEvents(base$);
    await firstOf(base$, 'tool_call_completed');
    await fx.runs.steer(base.runId, STEER, P);
    expect((await baseEvents).at(-1)?.type).toBe('run_completed');

    const { runId } = await fx.runs.start({ agent: 'queue-agent', threadId: 't', input, principal: P });
    const events$ = fx.runs.events(runId, { principal: P });
    const delivered = allEvents(events$);
    await firstOf(events$, 'tool_call_completed');
    await fx.runs.steer(runId, STEER, P); // injected in an early turn: journalled before the kill
    const inTurn7 = (e: RunEvent) => e.type === 'tool_call_started' && e.turn === 7;
    await firstValueFrom(events$.pipe(filter(inTurn7)));
    const owner = await fx.redis.hget(`${fx.prefix}:${fx.queue}:lc:run:${runId}`, 'owner');
    const lost = pool.find((w) => w.id === owner)!;
    lost.child.kill('SIGKILL');
    const events = await delivered;

    const terminals = events.filter(isTerminalEvent);
    const resumed = events.flatMap((e) => (e.type === 'run_resumed' ? [e] : []));
    const injected = events.filter((e) => e.type === 'user_message_injected' && e.content === STEER);
    const started = new Set(events.flatMap((e) => (e.type === 'tool_call_started' ? [e.callId] : [])));
    const counts = executions(pool, runId);
    const items = (await store.session(`${P}/t`).load()) as readonly Item[];
    // The call running at the kill has the interrupted result ("its effects are unknown"), not the tool's.
    const interrupted = new Set(
      items.flatMap((i) => (i.type === 'tool_result' && !i.output.startsWith('waited') ? [i.callId] : [])),
    );
    const steeredInHistory = items.filter((i) => i.type === 'user' && i.text === STEER).length;
    console.log(
      `continue after SIGKILL in turn 7: terminals ${terminals.length} (${terminals.map((t) => t.type).join(',')}); ` +
        `run_resumed ${resumed.length} (fromTurn ${resumed.map((r) => r.fromTurn).join(',')}); ` +
        `tool calls ${started.size}, interrupted ${interrupted.size}, most executions of one call ` +
        `${Math.max(...counts.values())}; steering injected ${injected.length}, in the history ${steeredInHistory}`,
    );

    expect(await lost.exited).toBe('SIGKILL');
    expect(terminals.map((t) => t.type)).toEqual(['run_completed']);
    expect(gapless(events)).toBe(true);
    expect(events.filter((e) => e.type === 'run_started')).toHaveLength(1);
    expect(resumed).toHaveLength(1);
    expect(resumed[0]!.fromTurn).toBeGreaterThanOrEqual(6);
    // Readers see run_resumed then the next turn's events; a reader from just before it reads exactly the rest.
    const at = events.indexOf(resumed[0]!);
    expect(events[at + 1]).toMatchObject({ type: 'turn_started', turn: resumed[0]!.fromTurn + 1 });
    const rest = await allEvents(fx.runs.events(runId, { principal: P, afterSeq: resumed[0]!.seq - 1 }));
    expect(rest.map((e) => e.seq)).toEqual(events.slice(at).map((e) => e.seq));
    // No tool call ran twice (none is idempotent); the one running at the kill has an interrupted result.
    expect([...counts.values()].every((n) => n <= 1)).toBe(true);
    expect(counts.size).toBeGreaterThanOrEqual(9);
    expect([...interrupted]).toEqual(['step-7']);
    expect(injected).toHaveLength(1);
    expect(steeredInHistory).toBe(1);
    expect(await history(store, 't', interrupted)).toEqual(await history(store, 'base', interrupted));
    // Its journal is gone with its terminal (never sealed: every claim committed under its own key).
    expect(await journalGone(store, runId)).toBe(true);
  }, 60_000);

  it('two crashes in a row: the run continued after a SIGKILL in turn 3 is continued again after one in turn 6', async () => {
    const store = await pg.makeStore();
    fx = queueFixture({ sessions: store });
    const settings = { pgSchema: store.schema, onWorkerLost: 'continue' as const };
    // Three workers: one is alive after both kills.
    const pool = await Promise.all([1, 2, 3].map(() => fx!.worker(settings)));
    const input = '!steps 7 150';
    const base = await fx.runs.start({ agent: 'queue-agent', threadId: 'base', input, principal: P });
    expect((await allEvents(fx.runs.events(base.runId, { principal: P }))).at(-1)?.type).toBe('run_completed');

    const { runId } = await fx.runs.start({ agent: 'queue-agent', threadId: 't', input, principal: P });
    const events$ = fx.runs.events(runId, { principal: P });
    const delivered = allEvents(events$);
    const killAt = async (turn: number) => {
      await firstValueFrom(events$.pipe(filter((e) => e.type === 'tool_call_started' && e.turn === turn)));
      const owner = await fx!.redis.hget(`${fx!.prefix}:${fx!.queue}:lc:run:${runId}`, 'owner');
      const lost = pool.find((w) => w.id === owner)!;
      lost.child.kill('SIGKILL');
      return lost;
    };
    const first = await killAt(3);
    const second = await killAt(6);
    const events = await delivered;

    const terminals = events.filter(isTerminalEvent);
    const resumed = events.flatMap((e) => (e.type === 'run_resumed' ? [e] : []));
    const counts = executions(pool, runId);
    const items = (await store.session(`${P}/t`).load()) as readonly Item[];
    const interrupted = new Set(
      items.flatMap((i) => (i.type === 'tool_result' && !i.output.startsWith('waited') ? [i.callId] : [])),
    );
    console.log(
      `two crashes (turns 3 and 6): terminals ${terminals.length} (${terminals.map((t) => t.type).join(',')}); ` +
        `run_resumed ${resumed.length} (fromTurn ${resumed.map((r) => r.fromTurn).join(',')}); ` +
        `tool calls executed ${counts.size}, most executions of one call ${Math.max(...counts.values())}; ` +
        `interrupted ${[...interrupted].join(',')}`,
    );

    expect(first).not.toBe(second);
    expect(await first.exited).toBe('SIGKILL');
    expect(await second.exited).toBe('SIGKILL');
    expect(terminals.map((t) => t.type)).toEqual(['run_completed']);
    expect(gapless(events)).toBe(true);
    expect(resumed).toHaveLength(2);
    expect([...counts.values()].every((n) => n <= 1)).toBe(true);
    expect([...interrupted]).toEqual(['step-3', 'step-6']);
    expect(await history(store, 't', interrupted)).toEqual(await history(store, 'base', interrupted));
    expect(await journalGone(store, runId)).toBe(true);
  }, 60_000);

  it('a SIGKILL between turns (just after a turn_completed) loses nothing: one terminal, the baseline history', async () => {
    const store = await pg.makeStore();
    fx = queueFixture({ sessions: store });
    const settings = { pgSchema: store.schema, onWorkerLost: 'continue' as const };
    const pool = await Promise.all([1, 2].map(() => fx!.worker(settings)));
    const input = '!steps 5 150';
    const base = await fx.runs.start({ agent: 'queue-agent', threadId: 'base', input, principal: P });
    expect((await allEvents(fx.runs.events(base.runId, { principal: P }))).at(-1)?.type).toBe('run_completed');

    const { runId } = await fx.runs.start({ agent: 'queue-agent', threadId: 't', input, principal: P });
    const events$ = fx.runs.events(runId, { principal: P });
    const delivered = allEvents(events$);
    await firstValueFrom(events$.pipe(filter((e) => e.type === 'turn_completed' && e.turn === 3)));
    const owner = await fx.redis.hget(`${fx.prefix}:${fx.queue}:lc:run:${runId}`, 'owner');
    const lost = pool.find((w) => w.id === owner)!;
    lost.child.kill('SIGKILL');
    const events = await delivered;

    const terminals = events.filter(isTerminalEvent);
    const resumed = events.flatMap((e) => (e.type === 'run_resumed' ? [e] : []));
    const counts = executions(pool, runId);
    const items = (await store.session(`${P}/t`).load()) as readonly Item[];
    const interrupted = new Set(
      items.flatMap((i) => (i.type === 'tool_result' && !i.output.startsWith('waited') ? [i.callId] : [])),
    );
    console.log(
      `SIGKILL after turn_completed 3: terminals ${terminals.length} (${terminals.map((t) => t.type).join(',')}); ` +
        `run_resumed ${resumed.length} (fromTurn ${resumed.map((r) => r.fromTurn).join(',')}); ` +
        `most executions of one call ${Math.max(...counts.values())}; interrupted ${interrupted.size}`,
    );

    expect(await lost.exited).toBe('SIGKILL');
    expect(terminals.map((t) => t.type)).toEqual(['run_completed']);
    expect(gapless(events)).toBe(true);
    expect(resumed).toHaveLength(1);
    expect([...counts.values()].every((n) => n <= 1)).toBe(true);
    // Killed after turn 4's entry journalled turn 3: nothing interrupted, or turn 4's call if it had started. In
    // the moment between turn_completed 3 and that write, turn 3's call (its result not journalled; the
    // journal-before case of queue-continue-checkpoints.test.ts). At most one either way.
    expect(interrupted.size).toBeLessThanOrEqual(1);
    expect([...interrupted].every((id) => id === 'step-3' || id === 'step-4')).toBe(true);
    expect(await history(store, 't', interrupted)).toEqual(await history(store, 'base', interrupted));
  }, 60_000);

  it('a cancel after the continue reaches the run on its new worker: one run_cancelled', async () => {
    const store = await pg.makeStore();
    fx = queueFixture({ sessions: store });
    const settings = { pgSchema: store.schema, onWorkerLost: 'continue' as const };
    const pool = await Promise.all([1, 2].map(() => fx!.worker(settings)));
    const { runId } = await fx.runs.start({
      agent: 'queue-agent',
      threadId: 't',
      input: '!steps 10 300',
      principal: P,
    });
    const events$ = fx.runs.events(runId, { principal: P });
    const delivered = allEvents(events$);
    await firstValueFrom(events$.pipe(filter((e) => e.type === 'tool_call_started' && e.turn === 3)));
    const owner = await fx.redis.hget(`${fx.prefix}:${fx.queue}:lc:run:${runId}`, 'owner');
    pool.find((w) => w.id === owner)!.child.kill('SIGKILL');
    await firstOf(events$, 'run_resumed');
    const cancelled = await fx.runs.cancel(runId, 'enough', P);
    const events = await delivered;
    const terminals = events.filter(isTerminalEvent);
    console.log(
      `cancel after continue: cancel answered ${cancelled}; terminals ${terminals.length} ` +
        `(${terminals.map((t) => `${t.type}/${t.stopReason}`).join(',')}); ` +
        `run_resumed ${events.filter((e) => e.type === 'run_resumed').length}`,
    );
    expect(cancelled).toBe(true);
    expect(terminals.map((t) => t.type)).toEqual(['run_cancelled']);
    expect(gapless(events)).toBe(true);
    // Cancelled: the session stays as before the run, and the run's journal is discarded.
    expect(await store.session(`${P}/t`).load()).toEqual([]);
    // The discard of a cancelled run's journal follows its terminal event (src/engine/journal.ts `discard`: an
    // async store's discard is not awaited before the terminal).
    expect(await journalGone(store, runId)).toBe(true);
  }, 60_000);
});
