/**
 * loopctl/bullmq threads and double-texting across processes: one active run per thread, every `ifBusy`
 * strategy (reject, enqueue, interrupt, rollback, steer), and 2 worker processes × N runs.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { isTerminalEvent, ThreadBusyError, type Item, type RunEvent } from '../../src/index.js';
import { PostgresSessionStore } from '../../src/postgres/index.js';
import { createSchema } from '../../src/postgres/index.js';
import { postgresFixture } from './support/postgres.js';
import { allEvents, firstOf, gapless, queueFixture, type QueueFixture } from './support/queue.js';

const P = 'alice';
const { pool, freshSchema } = postgresFixture();
let fx: QueueFixture | undefined;
afterEach(async () => {
  await fx?.cleanup();
  fx = undefined;
});

async function withSessions() {
  const schema = freshSchema();
  await createSchema(pool, { schema });
  const sessions = new PostgresSessionStore(pool, { schema });
  fx = queueFixture({ sessions });
  return { schema, sessions };
}

const user = (id: string, text: string): Item => ({ type: 'user', id, text });
const texts = (items: readonly Item[]) => items.flatMap((i) => (i.type === 'user' ? [i.text] : []));
const terminalOf = (events: readonly RunEvent[]) => events.at(-1)!;

describe('queueRuns threads: ifBusy across processes', () => {
  it('reject: ThreadBusyError (409) while a run is active, queued or running', async () => {
    fx = queueFixture();
    const { runId } = await fx.runs.start({ agent: 'queue-agent', threadId: 't', input: '!tool 1500', principal: P });
    const busy = fx.runs.start({ agent: 'queue-agent', threadId: 't', input: 'x', principal: P, ifBusy: 'reject' });
    await expect(busy).rejects.toBeInstanceOf(ThreadBusyError);
    await expect(busy).rejects.toMatchObject({ code: 'thread_busy', runId });
    // Another principal's thread of the same name is another thread.
    const other = await fx.runs.start({
      agent: 'queue-agent',
      threadId: 't',
      input: 'x',
      principal: 'bob',
      ifBusy: 'reject',
    });
    expect(other.runId).not.toBe(runId);
    await fx.worker();
    expect(terminalOf(await allEvents(fx.runs.events(runId, { principal: P }))).type).toBe('run_completed');
  }, 60_000);

  it('enqueue: the new run waits for the active one, then runs; the history holds both in order', async () => {
    const { sessions, schema } = await withSessions();
    await fx!.worker({ pgSchema: schema });
    const a = await fx!.runs.start({
      agent: 'queue-agent',
      threadId: 't',
      input: [user('a', '!tool 800')],
      principal: P,
    });
    const b = await fx!.runs.start({
      agent: 'queue-agent',
      threadId: 't',
      input: [user('a', '!tool 800'), user('b', 'then this')],
      principal: P,
      ifBusy: 'enqueue',
    });
    expect(b.runId).not.toBe(a.runId);
    const [ea, eb] = await Promise.all([
      allEvents(fx!.runs.events(a.runId, { principal: P })),
      allEvents(fx!.runs.events(b.runId, { principal: P })),
    ]);
    expect(terminalOf(ea), JSON.stringify(terminalOf(ea))).toMatchObject({ type: 'run_completed' });
    expect(terminalOf(eb), JSON.stringify(terminalOf(eb))).toMatchObject({ type: 'run_completed' });
    expect(ea.at(-1)!.at).toBeLessThanOrEqual(eb[0]!.at);
    const history = await sessions.session(`${P}/t`).load();
    expect(texts(history)).toEqual(['!tool 800', 'then this']);
  }, 60_000);

  it('interrupt: the active run is cancelled, its consistent prefix committed, then the new run runs', async () => {
    const { sessions, schema } = await withSessions();
    await fx!.worker({ pgSchema: schema });
    const a = await fx!.runs.start({
      agent: 'queue-agent',
      threadId: 't',
      input: [user('a', '!turns 5 400')],
      principal: P,
    });
    await firstOf(fx!.runs.events(a.runId, { principal: P }), 'turn_completed');
    const b = await fx!.runs.start({
      agent: 'queue-agent',
      threadId: 't',
      input: [user('b', 'instead')],
      principal: P,
      ifBusy: 'interrupt',
    });
    const ea = await allEvents(fx!.runs.events(a.runId, { principal: P }));
    expect(terminalOf(ea)).toMatchObject({ type: 'run_cancelled', reason: { type: 'interrupted', by: b.runId } });
    const eb = await allEvents(fx!.runs.events(b.runId, { principal: P }));
    expect(terminalOf(eb).type).toBe('run_completed');
    const history = await sessions.session(`${P}/t`).load();
    expect(texts(history)).toEqual(['!turns 5 400', 'instead']);
    // the interrupted run's finished turns stayed
    expect(history.some((i) => i.type === 'assistant' && i.toolCalls.length > 0)).toBe(true);
  }, 60_000);

  it('rollback: the active run is cancelled and discarded, then the new run runs', async () => {
    const { sessions, schema } = await withSessions();
    await fx!.worker({ pgSchema: schema });
    const a = await fx!.runs.start({
      agent: 'queue-agent',
      threadId: 't',
      input: [user('a', '!turns 5 400')],
      principal: P,
    });
    await firstOf(fx!.runs.events(a.runId, { principal: P }), 'turn_completed');
    const b = await fx!.runs.start({
      agent: 'queue-agent',
      threadId: 't',
      input: [user('b', 'instead')],
      principal: P,
      ifBusy: 'rollback',
    });
    const ea = await allEvents(fx!.runs.events(a.runId, { principal: P }));
    expect(terminalOf(ea)).toMatchObject({ type: 'run_cancelled', reason: { type: 'rolled_back', by: b.runId } });
    expect(terminalOf(await allEvents(fx!.runs.events(b.runId, { principal: P }))).type).toBe('run_completed');
    expect(texts(await sessions.session(`${P}/t`).load())).toEqual(['instead']);
  }, 60_000);

  it("steer (the default): the new input goes into the active run's mailbox, keeping its id", async () => {
    fx = queueFixture();
    await fx.worker();
    const a = await fx.runs.start({ agent: 'queue-agent', threadId: 't', input: '!turns 2 500', principal: P });
    await firstOf(fx.runs.events(a.runId, { principal: P }), 'tool_call_started');
    const b = await fx.runs.start({
      agent: 'queue-agent',
      threadId: 't',
      input: [user('m2', 'also this')],
      principal: P,
    });
    expect(b).toEqual({ runId: a.runId, steeringId: 'm2' });
    const events = await allEvents(fx.runs.events(a.runId, { principal: P }));
    expect(events.filter((e) => e.type === 'user_message_injected')).toMatchObject([
      { id: 'm2', content: 'also this' },
    ]);
  }, 60_000);

  it('2 worker processes × 40 runs: every run completes with exactly one terminal event; both workers work', async () => {
    fx = queueFixture();
    const [w1, w2] = await Promise.all([fx.worker({ concurrency: 5 }), fx.worker({ concurrency: 5 })]);
    const started = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        fx!.runs.start({ agent: 'queue-agent', threadId: `t${i}`, input: '!stream 20 5', principal: P }),
      ),
    );
    const all = await Promise.all(started.map(({ runId }) => allEvents(fx!.runs.events(runId, { principal: P }))));
    for (const events of all) {
      expect(events.filter(isTerminalEvent).map((e) => e.type)).toEqual(['run_completed']);
      expect(gapless(events)).toBe(true);
    }
    const owners = await Promise.all(
      started.map(({ runId }) => fx!.redis.hget(`${fx!.prefix}:${fx!.queue}:lc:run:${runId}`, 'owner')),
    );
    expect(new Set(owners)).toEqual(new Set([w1.id, w2.id]));
  }, 120_000);
});
