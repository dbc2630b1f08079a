/**
 * The queue's trust boundary (docs/scale-out.md, "Trust boundary"), against real Redis and a real worker
 * process: someone who can write to Redis but has not the `secret` cannot start a run (a forged job fails with
 * `QueueAuthError`, no run starts), approve a call, inject steering (a command or an item in a thread's
 * queue), or replay a captured command onto the same or another run; the same things done through
 * `queueRuns` with the secret work. Each spec counts and prints what was refused.
 */
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { QueueAuth } from '../../src/bullmq/auth.js';
import { jobParts } from '../../src/bullmq/shared.js';
import type { RunEvent } from '../../src/index.js';
import { allEvents, firstOf, QUEUE_SECRET, queueFixture, sleep, type QueueFixture } from './support/queue.js';

const P = 'alice';
const THREAD_KEY = (t: string) => `${P}/${t}`; // queueRuns' default session id of (thread, principal)

let fx: QueueFixture | undefined;
let probe: Redis | undefined;
afterEach(async () => {
  probe?.disconnect();
  await fx?.cleanup();
  fx = probe = undefined;
});

const output = (events: readonly RunEvent[]) => {
  const end = events.at(-1);
  return end?.type === 'run_completed' ? String(end.output) : '';
};

/** A subscriber on a reply channel: the worker's answers to forged commands, in order. */
async function replyProbe(url: string, channel: string) {
  const sub = new Redis(url, { maxRetriesPerRequest: null });
  probe = sub;
  const answers: Record<string, unknown>[] = [];
  sub.on('message', (_c: string, message: string) => answers.push(JSON.parse(message) as Record<string, unknown>));
  await sub.subscribe(channel);
  return {
    /** The `nth` answer (1-based) with `reqId`. */
    async answer(reqId: string, nth = 1): Promise<Record<string, unknown>> {
      const found = () => answers.filter((a) => a['reqId'] === reqId)[nth - 1];
      for (let i = 0; i < 600 && !found(); i++) await sleep(25);
      if (!found()) throw new Error(`no answer ${nth} to ${reqId}`);
      return found()!;
    },
  };
}

/**
 * What someone with Redis access and without the secret can do to send a command: write a record into the
 * run's control hash and publish a wake-up on the worker's channel.
 */
async function inject(f: QueueFixture, workerId: string, runId: string, cid: string, message: unknown) {
  const json = typeof message === 'string' ? message : JSON.stringify(message);
  await f.redis.hset(`${f.prefix}:${f.queue}:lc:run:${runId}:ctl`, cid, `1000\n${json}`);
  await f.redis.publish(workerChannel(f, workerId), JSON.stringify({ wake: runId }));
}

const workerChannel = (f: QueueFixture, workerId: string) => `${f.prefix}:${f.queue}:lc:w:${workerId}`;
/** The refusal of a command answer, `{ name, code }`. */
const refusalOf = (reply: Record<string, unknown>) =>
  (reply['result'] as { ok: boolean; error?: { name: string; code?: string } }).error;

describe('queue trust boundary: what is not signed with the secret is refused', () => {
  it('forged jobs (unsigned, another key, a changed thread, a run state naming another thread) fail; none runs', async () => {
    fx = queueFixture();
    await fx.worker();
    const queue = new Queue(fx.queue, { connection: { host: '127.0.0.1', port: 6379 }, prefix: fx.prefix });
    try {
      const attacker = QueueAuth.of({ secret: 'an-attackers-key-of-32-bytes-or-more' });
      const genuine = QueueAuth.of({ secret: QUEUE_SECRET });
      const victim = THREAD_KEY('victim');
      const base = (runId: string) => ({ runId, agent: 'queue-agent', sessionId: victim, input: '!stream 1 0' });
      const signedFor = (auth: QueueAuth, data: ReturnType<typeof base>) => ({
        ...data,
        mac: auth.sign(jobParts(data)),
      });
      const changed = {
        ...signedFor(genuine, { ...base('forged-3'), sessionId: THREAD_KEY('mine') }),
        sessionId: victim,
      };
      // The run state names the victim's thread; the job (genuinely signed) names another one.
      const misrouted = signedFor(genuine, { ...base('forged-4'), sessionId: THREAD_KEY('mine') });
      await fx.redis.hset(`${fx.prefix}:${fx.queue}:lc:run:forged-4`, 'thread', victim, 'state', 'queued');
      const forged = [
        { data: base('forged-1'), code: 'unsigned' },
        { data: signedFor(attacker, base('forged-2')), code: 'mis_signed' },
        { data: changed, code: 'mis_signed' },
        { data: misrouted, code: 'thread_mismatch' },
      ];
      for (const f of forged) await queue.add('run', f.data, { jobId: f.data.runId, removeOnFail: false });
      let refused = 0;
      for (const f of forged) {
        let state = '';
        for (let i = 0; i < 400 && state !== 'failed'; i++) {
          state = await queue.getJobState(f.data.runId);
          if (state !== 'failed') await sleep(25);
        }
        const job = await queue.getJob(f.data.runId);
        expect(state, f.data.runId).toBe('failed');
        expect(job?.failedReason).toContain(`${f.code}:`);
        const events = await fx.redis.exists(`${fx.prefix}:${fx.queue}:lc:run:${f.data.runId}:events`);
        expect(events, `${f.data.runId} has no events: no run started`).toBe(0);
        refused++;
      }
      expect(await fx.redis.exists(`${fx.prefix}:${fx.queue}:lc:thread:${victim}:steer`)).toBe(0);
      console.log(
        `forged jobs: ${forged.length} sent, ${refused} refused ` +
          `(${forged.map((f) => f.code).join(', ')}), 0 runs started`,
      );
      expect(refused).toBe(4);
      // The genuine path works.
      const { runId } = await fx.runs.start({ agent: 'queue-agent', threadId: 'victim', input: 'hello', principal: P });
      const events = await allEvents(fx.runs.events(runId, { principal: P }));
      expect(output(events)).toContain('[seen: hello]');
    } finally {
      await queue.close();
    }
  }, 60_000);

  it('a forged approval (unsigned, another key) is refused; the call still awaits and a signed decide works', async () => {
    fx = queueFixture();
    const worker = await fx.worker();
    const { runId } = await fx.runs.start({ agent: 'queue-agent', threadId: 't', input: '!approve', principal: P });
    const events$ = fx.runs.events(runId, { principal: P });
    const requested = (await firstOf(events$, 'tool_approval_requested')) as { callId: string };
    const replies = await replyProbe(fx.url, 'attacker-replies');
    const command = { op: 'decide', callId: requested.callId, approve: true };
    const attacker = QueueAuth.of({ secret: 'an-attackers-key-of-32-bytes-or-more' });
    const unsigned = { runId, cid: 'a1', command, reqId: 'f1', replyTo: 'attacker-replies' };
    const parts = ['request', runId, 'a2', command, null, 'f2', 'attacker-replies'];
    const misSigned = {
      runId,
      cid: 'a2',
      command,
      reqId: 'f2',
      replyTo: 'attacker-replies',
      mac: attacker.sign(parts),
    };
    await inject(fx, worker.id, runId, 'a1', unsigned);
    await inject(fx, worker.id, runId, 'a2', misSigned);
    const refusals = [refusalOf(await replies.answer('f1')), refusalOf(await replies.answer('f2'))];
    expect(refusals).toEqual([
      expect.objectContaining({ name: 'QueueAuthError', code: 'unsigned' }),
      expect.objectContaining({ name: 'QueueAuthError', code: 'mis_signed' }),
    ]);
    console.log(`forged approvals: 2 sent, ${refusals.length} refused (${refusals.map((r) => r?.code).join(', ')})`);
    // Still awaiting: the signed decision is the one that decides it.
    expect(await fx.runs.decide(runId, requested.callId, { approve: true }, P)).toBe(true);
    const events = await allEvents(events$);
    expect(events.filter((e) => e.type === 'tool_call_completed')).toHaveLength(1);
    expect(output(events)).toBe('done: guarded ran [seen: ]');
  }, 60_000);

  it('forged steering (an unsigned command, an item written into the thread queue) is never delivered', async () => {
    fx = queueFixture();
    // Queued (no worker yet): steering waits in the thread's queue in Redis; a forged item is pushed beside it.
    const { runId } = await fx.runs.start({
      agent: 'queue-agent',
      threadId: 's',
      input: '!stream 30 50',
      principal: P,
    });
    await fx.runs.steer(runId, 'genuine-queued', P);
    const list = `${fx.prefix}:${fx.queue}:lc:thread:${THREAD_KEY('s')}:steer`;
    await fx.redis.rpush(list, JSON.stringify({ id: 'forged-item', content: 'INJECTED-IN-QUEUE' }));
    const worker = await fx.worker();
    const events$ = fx.runs.events(runId, { principal: P });
    await firstOf(events$, 'text_delta');
    const replies = await replyProbe(fx.url, 'attacker-replies');
    const command = { op: 'steer', text: 'INJECTED-BY-COMMAND' };
    const forged = { runId, cid: 's1', command, reqId: 'f1', replyTo: 'attacker-replies' };
    await inject(fx, worker.id, runId, 's1', forged);
    const refusal = refusalOf(await replies.answer('f1'));
    expect(refusal).toMatchObject({ name: 'QueueAuthError', code: 'unsigned' });
    await fx.runs.steer(runId, 'genuine-live', P);
    const events = await allEvents(events$);
    const text = output(events);
    expect(text).toContain('genuine-queued');
    expect(text).toContain('genuine-live');
    const injected = ['INJECTED-IN-QUEUE', 'INJECTED-BY-COMMAND'].filter((t) => JSON.stringify(events).includes(t));
    console.log(
      `forged steering: 2 sent (1 command refused: ${refusal?.code}; 1 queue item dropped), ` +
        `${injected.length} delivered`,
    );
    expect(injected).toEqual([]);
  }, 60_000);

  it('a captured command replayed onto its run is refused (replayed), onto another run refused (mis_signed)', async () => {
    fx = queueFixture();
    const worker = await fx.worker();
    const a = await fx.runs.start({ agent: 'queue-agent', threadId: 'a', input: '!stream 40 50', principal: P });
    const b = await fx.runs.start({ agent: 'queue-agent', threadId: 'b', input: '!stream 40 50', principal: P });
    const eventsA$ = fx.runs.events(a.runId, { principal: P });
    const eventsB$ = fx.runs.events(b.runId, { principal: P });
    await Promise.all([firstOf(eventsA$, 'text_delta'), firstOf(eventsB$, 'text_delta')]);
    await fx.runs.steer(a.runId, 'once-only', P);
    // The attacker reads the applied command off Redis (the run's taken records) and writes it again.
    const done = await fx.redis.hgetall(`${fx.prefix}:${fx.queue}:lc:run:${a.runId}:ctl:done`);
    const [[cid, value]] = Object.entries(done) as [[string, string]];
    const original = JSON.parse(value.slice(value.indexOf('\n') + 1)) as Record<string, unknown>;
    const reqId = String(original['reqId']);
    const replies = await replyProbe(fx.url, String(original['replyTo']));
    await inject(fx, worker.id, a.runId, cid, original);
    const sameRun = refusalOf(await replies.answer(reqId, 1));
    await inject(fx, worker.id, b.runId, cid, original);
    const otherRun = refusalOf(await replies.answer(reqId, 2));
    const relabelled = { ...original, runId: b.runId };
    await inject(fx, worker.id, b.runId, cid, relabelled);
    const changed = refusalOf(await replies.answer(reqId, 3));
    const refusals = [sameRun, otherRun, changed];
    expect(refusals).toEqual([
      expect.objectContaining({ name: 'QueueAuthError', code: 'replayed' }),
      expect.objectContaining({ name: 'QueueAuthError', code: 'mis_signed' }),
      expect.objectContaining({ name: 'QueueAuthError', code: 'mis_signed' }),
    ]);
    const [eventsA, eventsB] = await Promise.all([allEvents(eventsA$), allEvents(eventsB$)]);
    const deliveredA = output(eventsA).split('once-only').length - 1;
    const deliveredB = output(eventsB).split('once-only').length - 1;
    console.log(
      `replayed commands: 3 sent, ${refusals.length} refused (${refusals.map((r) => r?.code).join(', ')}); ` +
        `'once-only' delivered ${deliveredA} time(s) to its run, ${deliveredB} to the other`,
    );
    expect([deliveredA, deliveredB]).toEqual([1, 0]);
  }, 60_000);
});
