/**
 * Resuming a suspended run through the queue (docs/scale-out.md, "Approvals across processes"): two worker
 * processes with `approvals: 'suspend'` and a Postgres session store; a run suspends at its `deploy` call, and
 * `queueRuns().resume` on this process resumes it with an approval on whichever worker takes the job. The resumed
 * run fails (or is cancelled) after `deploy` started; a second resume of the same suspension completes without
 * running `deploy` again (exactly one execution across workers); a third is refused `already_resumed`. A
 * suspension changed in Redis is refused before any run, and one a later run made stale names `resume`. Over
 * HTTP, `RunAgentInput.resume` goes the same way. Real Redis and Postgres, a queue and schema of its own.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSchema } from '../../src/postgres/index.js';
import { ConfigurationError, ResumeError, ThreadBusyError, type Item, type RunEvent } from '../../src/index.js';
import { allEvents, firstOf, queueFixture, type QueueFixture, type WorkerProcess } from './support/queue.js';
import { postgresFixture } from './support/postgres.js';
import { createHandler } from '../../src/http/index.js';
import { bearer, listen, readStream, request } from '../support/http.js';

const P = 'alice';
const AGENT = 'queue-agent';
const user = (id: string, text: string): Item => ({ type: 'user', id, text });
// One schema for the file's workers (the fixture's own schemas are dropped after each test).
const { pool } = postgresFixture();

let fx: QueueFixture;
let workers: WorkerProcess[] = [];
const schema = `loopctl_test_qres_${process.pid}`;

beforeAll(async () => {
  await createSchema(pool, { schema });
  fx = queueFixture();
  workers = await Promise.all([1, 2].map(() => fx.worker({ suspend: true, pgSchema: schema })));
}, 60_000);
afterAll(async () => {
  await fx?.cleanup();
  await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
});

/** How many times each `deploy` call ran, over both workers' output. */
function executions(): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const w of workers)
    for (const m of w.out().matchAll(/^exec deploy (\S+)$/gm)) counts[m[1]!] = (counts[m[1]!] ?? 0) + 1;
  return counts;
}

/** The worker (1 or 2) that ran `runId`, from its run notes; 0 when none did. */
const ranOn = (runId: string) => workers.findIndex((w) => w.out().includes(`note claimed ${runId} `)) + 1;

/** A run of `directive` on `threadId` to its suspension; the id of its pending `deploy` call. */
async function suspendAt(threadId: string, directive: string, principal = P): Promise<{ callId: string }> {
  const input = [user(`${threadId}-u`, directive)];
  const { runId } = await fx.runs.start({ agent: AGENT, threadId, input, principal });
  const end = (await allEvents(fx.runs.events(runId, { principal }))).at(-1)!;
  expect(end).toMatchObject({ type: 'run_completed', stopReason: 'needs_approval' });
  const suspended = (end as Extract<RunEvent, { type: 'run_completed' }>).suspended!;
  return { callId: suspended.pending[0]!.callId };
}

const resume = (threadId: string, decisions: Record<string, unknown>) =>
  fx.runs.resume!({ agent: AGENT, threadId, input: [], decisions: decisions as never, principal: P });

const terminalOf = async (runId: string) => (await allEvents(fx.runs.events(runId, { principal: P }))).at(-1)!;

describe('queueRuns.resume: a suspended run resumed through the queue', () => {
  it('the resumed run fails after the approved call ran; a second resume completes without running it again', async () => {
    const { callId } = await suspendAt('fail', '!deploy fail');
    await expect(resume('fail', {})).rejects.toMatchObject({ name: 'ResumeError', code: 'missing_decision' });
    await expect(resume('fail', { [callId]: { approve: true }, nope: { approve: true } })).rejects.toMatchObject({
      code: 'unknown_call',
    });
    const first = await resume('fail', { [callId]: { approve: true } });
    const firstEnd = await terminalOf(first.runId);
    expect(firstEnd.type).toBe('run_failed');
    const second = await resume('fail', { [callId]: { approve: true } });
    const secondEnd = await terminalOf(second.runId);
    expect(secondEnd.type).toBe('run_completed');
    expect((secondEnd as { output: string }).output).toMatch(/^done: Error: not run again/);
    // A resume that completed consumed the suspension.
    await expect(resume('fail', { [callId]: { approve: true } })).rejects.toMatchObject({ code: 'already_resumed' });
    const counts = executions();
    console.log(
      `queue resume after fail: executions ${callId}=${counts[callId] ?? 0}; ` +
        `terminals ${firstEnd.type}, ${secondEnd.type}; workers ${ranOn(first.runId)}, ${ranOn(second.runId)}`,
    );
    expect(counts[callId]).toBe(1);
  }, 30_000);

  it('the resumed run is cancelled while the approved call runs; a second resume never runs it again', async () => {
    const { callId } = await suspendAt('cancel', '!deploy cancel');
    const first = await resume('cancel', { [callId]: { approve: true } });
    await firstOf(fx.runs.events(first.runId, { principal: P }), 'tool_call_started');
    // The thread is busy with the resumed run: another resume is refused.
    await expect(resume('cancel', { [callId]: { approve: true } })).rejects.toThrow(ThreadBusyError);
    expect(await fx.runs.cancel(first.runId, 'stop it', P)).toBe(true);
    const second = await resume('cancel', { [callId]: { approve: true } });
    const secondEnd = await terminalOf(second.runId);
    expect(secondEnd.type).toBe('run_completed');
    expect((secondEnd as { output: string }).output).toMatch(/^done: Error: not run again/);
    const counts = executions();
    console.log(
      `queue resume after cancel: executions ${callId}=${counts[callId] ?? 0}; ` +
        `terminals run_cancelled, ${secondEnd.type}; workers ${ranOn(first.runId)}, ${ranOn(second.runId)}`,
    );
    expect(counts[callId]).toBe(1);
  }, 30_000);

  it('a suspension changed in Redis is refused before any run; a thread without one names resume', async () => {
    const { callId } = await suspendAt('tamper', '!deploy reject');
    const key = `${fx.prefix}:${fx.queue}:lc:thread:${P}/tamper:susp`;
    const json = (await fx.redis.hget(key, 'record'))!;
    const record = JSON.parse(json) as { suspended: { pending: { arguments: string }[] } };
    record.suspended.pending[0]!.arguments = JSON.stringify({ ms: 1 });
    await fx.redis.hset(key, 'record', JSON.stringify(record));
    const refused = await resume('tamper', { [callId]: { approve: true } }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ResumeError);
    expect(refused).toMatchObject({ code: 'tampered' });
    await fx.redis.hset(key, 'record', json); // as kept: it resumes
    const run = await resume('tamper', { [callId]: { approve: false, reason: 'not now' } });
    expect((await terminalOf(run.runId)).type).toBe('run_completed');
    await expect(resume('never-suspended', {})).rejects.toThrow(ConfigurationError);
    await expect(resume('never-suspended', {})).rejects.toMatchObject({ field: 'resume' });
    // A run started on the thread since makes its suspension stale: nothing to resume there either.
    const next = await fx.runs.start({ agent: AGENT, threadId: 'tamper', input: 'hello', principal: P });
    expect((await terminalOf(next.runId)).type).toBe('run_completed');
    await expect(resume('tamper', { [callId]: { approve: true } })).rejects.toMatchObject({ field: 'resume' });
    expect(executions()[callId]).toBeUndefined();
  }, 30_000);

  it('over HTTP: RunAgentInput.resume resumes the queued suspension; a second one is refused already_resumed', async () => {
    const { callId } = await suspendAt('http', '!deploy reject', 'p');
    const server = await listen(createHandler({ runs: fx.runs, authorize: bearer }));
    try {
      const url = `${server.url}/agents/${AGENT}/runs`;
      const body = {
        threadId: 'http',
        runId: 'client-run',
        state: {},
        messages: [{ id: 'http-u', role: 'user', content: '!deploy reject' }],
        tools: [],
        context: [],
        forwardedProps: {},
        resume: [{ interruptId: callId, status: 'resolved', payload: { approve: true } }],
      };
      const resumed = await readStream(url, { principal: 'p', body });
      expect(resumed.status).toBe(200);
      expect(resumed.frames.at(-1)?.event).toMatchObject({ type: 'RUN_FINISHED' });
      const again = await request(url, { principal: 'p', body });
      expect([again.status, again.body.error?.code]).toEqual([409, 'already_resumed']);
      expect(executions()[callId]).toBe(1);
    } finally {
      await server.close();
    }
  }, 30_000);
});
