/**
 * The queue's wire is the run command protocol: a worker answers a signed message it cannot parse with a typed
 * refusal naming the field (never a throw in its message handler, never silence when it can answer), and goes
 * on serving; a bad command from queueRuns is refused in the calling process at once, the same
 * ConfigurationError localRuns gives.
 */
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { keysOf } from '../../src/bullmq/keys.js';
import { QueueAuth } from '../../src/bullmq/auth.js';
import { firstOf, QUEUE_SECRET, queueFixture, type QueueFixture } from './support/queue.js';

const P = 'alice';
let fx: QueueFixture | undefined;
afterEach(async () => {
  await fx?.cleanup();
  fx = undefined;
});

describe("a worker's channel speaks the run command protocol", () => {
  it('bad messages get a typed refusal naming the field; the worker still serves its run afterwards', async () => {
    fx = queueFixture();
    const worker = await fx.worker();
    const keys = keysOf(fx.prefix, fx.queue);
    const { runId } = await fx.runs.start({ agent: 'runs-contract', threadId: 't', input: 'hold', principal: P });
    await firstOf(fx.runs.events(runId, { principal: P }), 'text_delta');
    const sub = new Redis(fx.url);
    const replies: unknown[] = [];
    const replyTo = keys.replyChannel('protocol-spec');
    await sub.subscribe(replyTo);
    sub.on('message', (_channel: string, message: string) => replies.push(JSON.parse(message)));
    try {
      // Signed with the queue secret (an unsigned message is refused before its command is read: queue-trust).
      const auth = QueueAuth.of({ secret: QUEUE_SECRET });
      const signed = (m: Record<string, unknown>) => {
        const withCid = { ...m, cid: `c${String(m['reqId'])}` };
        const parts = ['request', m['runId'] ?? null, withCid.cid, m['command'], null, m['reqId'], m['replyTo']];
        return JSON.stringify({ ...withCid, mac: auth.sign(parts) });
      };
      // Control is state: a command is a record in the run's control hash; the publish only wakes the worker.
      let n = 0;
      const send = async (message: string | Record<string, unknown>) => {
        const cid = typeof message === 'string' ? `raw${++n}` : `c${String(message['reqId'])}`;
        const json = typeof message === 'string' ? message : signed(message);
        await fx!.redis.hset(keys.control(runId), cid, `${++n}\n${json}`);
        await fx!.redis.publish(keys.workerChannel(worker.id), JSON.stringify({ wake: runId }));
      };
      await send('{not json');
      await send({ reqId: '1', replyTo, runId, command: { op: 'stop', graceMs: 2 ** 31 } });
      await send({ reqId: '2', replyTo, runId, command: { op: 'pause' } });
      await send({ reqId: '3', replyTo, runId, command: { op: 'withdraw', steeringId: 's', extra: true } });
      await send({ reqId: '4', replyTo, command: { op: 'cancel' } });
      await send({ reqId: '5', replyTo, runId, command: { op: 'withdraw', steeringId: 'none' } });
      for (let i = 0; i < 100 && replies.length < 5; i++) await new Promise((r) => setTimeout(r, 50));
      const refusal = (reqId: string, field: string) => ({
        reqId,
        kind: 'result',
        result: { ok: false, error: { name: 'ConfigurationError', field } },
      });
      expect(replies).toMatchObject([
        refusal('1', 'graceMs'),
        refusal('2', 'op'),
        refusal('3', 'extra'),
        refusal('4', 'runId'),
        { reqId: '5', kind: 'result', result: { ok: true, op: 'withdraw', withdrawn: false } },
      ]);
      // queueRuns refuses the same bad stop before anything is sent, naming the same field.
      await expect(fx.runs.stop(runId, { at: 'turn_end', graceMs: Infinity }, P)).rejects.toMatchObject({
        name: 'ConfigurationError',
        field: 'graceMs',
      });
      // The worker went on: its run still takes commands.
      expect(await fx.runs.stop(runId, { at: 'turn_end', graceMs: 60_000 }, P)).toBe(true);
      expect(await fx.runs.cancel(runId, 'done', P)).toBe(true);
    } finally {
      sub.disconnect();
    }
  }, 60_000);
});
