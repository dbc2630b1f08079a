/**
 * The demo of docs/scale-out.md with the built bin: `loopctl worker --queue redis://…` serving the CLI's agent
 * (offline model) and `loopctl serve --queue redis://…` queueing the page's runs; a run started over HTTP is
 * run by the worker and its AG-UI stream comes back through the API process. SIGTERM drains the worker (exit 0).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN, cliEnv, ensureBuilt, removeTempFolders, tempFolder, waitFor } from '../cli-helpers.js';
import { Redis } from 'ioredis';

const QUEUE = `cli${process.pid}`;
const URL_ = `redis://127.0.0.1:6379/0?queue=${QUEUE}`;
const procs: ChildProcess[] = [];

function start(args: string[], cwd: string) {
  const child = spawn(process.execPath, [BIN, ...args], { cwd, env: cliEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
  procs.push(child);
  const io = { out: '', err: '' };
  child.stdout!.setEncoding('utf8').on('data', (d: string) => (io.out += d));
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (io.err += d));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, io, exited };
}

beforeAll(() => ensureBuilt({ web: true }), 180_000);
afterAll(async () => {
  for (const p of procs) if (p.exitCode === null) p.kill('SIGKILL');
  const redis = new Redis('redis://127.0.0.1:6379');
  const keys = await redis.keys(`loopctl:${QUEUE}:*`);
  if (keys.length > 0) await redis.del(...keys);
  redis.disconnect();
  removeTempFolders();
});

describe('loopctl serve --queue + loopctl worker --queue', () => {
  it('a run asked over HTTP is run by the worker process; SIGTERM drains it and it exits 0', async () => {
    const folder = tempFolder({ 'notes.md': '# notes\none\ntwo\n' });
    const worker = start(['worker', '--queue', URL_], folder);
    await waitFor('the worker line', () => /loopctl worker (\S+): taking runs/.exec(worker.io.out)?.[1], 30_000);
    const serve = start(['serve', '--port', '0', '--queue', URL_], folder);
    const address = await waitFor('the address', () => /http:\/\/\S+\?token=\S+/.exec(serve.io.out)?.[0], 30_000);
    const origin = new URL(address).origin;
    const opened = await fetch(address, { redirect: 'manual' });
    const cookie = opened.headers
      .getSetCookie()
      .map((c) => c.split(';')[0])
      .join('; ');
    const body = {
      threadId: 'th1',
      runId: 'client',
      state: {},
      tools: [],
      context: [],
      forwardedProps: {},
      messages: [{ id: 'm1', role: 'user', content: 'count the lines of notes.md' }],
    };
    const answer = await fetch(`${origin}/api/agents/loopctl/runs`, {
      method: 'POST',
      headers: { cookie, 'content-type': 'application/json', accept: 'text/event-stream' },
      body: JSON.stringify(body),
    });
    expect(answer.status).toBe(200);
    const runId = answer.headers.get('loopctl-run-id');
    const text = await answer.text();
    expect(text).toContain('"type":"RUN_STARTED"');
    expect(text).toContain('"type":"RUN_FINISHED"');
    expect(text).toContain('"outcome":{"type":"success"}');
    const redis = new Redis('redis://127.0.0.1:6379');
    const owner = await redis.hget(`loopctl:${QUEUE}:lc:run:${runId}`, 'owner');
    redis.disconnect();
    expect(worker.io.out).toContain(`loopctl worker ${owner}:`);
    // One line per run, in words: claimed, then ended with its stop reason.
    await waitFor('the ended line', () => worker.io.out.includes(`run ${runId}: ended, Done.`) || undefined, 10_000);
    expect(worker.io.out).toContain(`run ${runId}: claimed (agent loopctl)`);
    worker.child.kill('SIGTERM');
    expect(await worker.exited).toBe(0);
    expect(worker.io.err).toContain('drained');
    serve.child.kill('SIGTERM');
    expect(await serve.exited).toBe(143);
  }, 120_000);
});
