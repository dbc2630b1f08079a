/**
 * loopctl/bullmq faults across processes: a worker SIGKILLed mid-run (stalled detection writes
 * run_failed{worker_lost} with the next seq, or reruns it once), SIGTERM drain (exit 0 after every terminal is
 * stored), and Redis unreachable mid-run (a second redis-server of this spec's own on another port, with an
 * append-only file so a restart keeps the data): back in time → the run goes on; not → event_store_unavailable.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { isTerminalEvent, type RunEvent } from '../../src/index.js';
import { allEvents, firstOf, gapless, queueFixture, sleep, type QueueFixture } from './support/queue.js';

const P = 'alice';
let fx: QueueFixture | undefined;
afterEach(async () => {
  await fx?.cleanup();
  fx = undefined;
});

const injected = (events: readonly RunEvent[]) =>
  events.flatMap((e) => (e.type === 'user_message_injected' ? [e.content] : []));
const ownerOf = (f: QueueFixture, runId: string) => f.redis.hget(`${f.prefix}:${f.queue}:lc:run:${runId}`, 'owner');

describe('queueRuns faults: a worker killed with SIGKILL mid-run', () => {
  it("onWorkerLost 'fail': one run_failed{worker_lost} with the next seq; held steering back to the thread", async () => {
    fx = queueFixture();
    const w1 = await fx.worker();
    const { runId } = await fx.runs.start({
      agent: 'queue-agent',
      threadId: 't',
      input: '!turns 5 1500',
      principal: P,
    });
    const events$ = fx.runs.events(runId, { principal: P });
    await firstOf(events$, 'tool_call_started');
    await fx.runs.steer(runId, 'held by the dead run', P);
    await firstOf(events$, 'user_message_injected'); // taken at turn 2: held
    await fx.runs.steer(runId, 'queued in its mailbox', P);
    expect(await ownerOf(fx, runId)).toBe(w1.id);
    const w2 = await fx.worker();
    w1.child.kill('SIGKILL');
    const events = await allEvents(events$);
    expect(gapless(events)).toBe(true);
    expect(events.filter(isTerminalEvent)).toHaveLength(1);
    const terminal = events.at(-1)!;
    expect(terminal).toMatchObject({
      type: 'run_failed',
      stopReason: 'worker_lost',
      error: { name: 'WorkerLostError' },
    });
    expect(terminal.type === 'run_failed' && terminal.undelivered.map((u) => u.content)).toEqual([
      'held by the dead run',
      'queued in its mailbox',
    ]);
    await sleep(1500); // nothing is written after the terminal
    expect(await allEvents(fx.runs.events(runId, { principal: P }))).toHaveLength(events.length);
    const next = await fx.runs.start({ agent: 'queue-agent', threadId: 't', input: 'again', principal: P });
    const after = await allEvents(fx.runs.events(next.runId, { principal: P }));
    expect(injected(after)).toEqual(['held by the dead run', 'queued in its mailbox']);
    expect(await ownerOf(fx, next.runId)).toBe(w2.id);
  }, 90_000);

  it("onWorkerLost 'retry_once': the run is rerun on another worker and completes; one run_started, one terminal", async () => {
    fx = queueFixture();
    // Both workers up before the run, so a slow start cannot let the run end before the kill.
    const pool = await Promise.all([1, 2].map(() => fx!.worker({ onWorkerLost: 'retry_once' })));
    const { runId } = await fx.runs.start({
      agent: 'queue-agent',
      threadId: 't',
      input: '!turns 2 1500',
      principal: P,
    });
    const events$ = fx.runs.events(runId, { principal: P });
    await firstOf(events$, 'tool_call_started');
    await fx.runs.steer(runId, 'steer', P);
    const owner = await ownerOf(fx, runId);
    pool.find((w) => w.id === owner)!.child.kill('SIGKILL');
    const events = await allEvents(events$);
    expect(gapless(events)).toBe(true);
    expect(events.filter((e) => e.type === 'run_started')).toHaveLength(1);
    expect(events.filter(isTerminalEvent).map((e) => e.type)).toEqual(['run_completed']);
    // Given back by the dead run (its injection is in the stream, never committed), taken once by the rerun,
    // after the note that tells the rerun's model of the call the lost worker had started.
    const notes = injected(events).filter((text) => text.startsWith('Note: this run was restarted'));
    expect(notes).toHaveLength(1);
    expect(notes[0]).toMatch(/- wait \{"ms":1500\}: interrupted; it may or may not have taken effect/);
    expect(injected(events)).toContain('steer');
    const terminal = events.at(-1)!;
    expect(terminal.type === 'run_completed' && terminal.output).toMatch(
      /\[seen: Note: this run was restarted[^|]*\|steer\]$/s,
    );
  }, 90_000);
});

describe('queueRuns faults: the only worker killed', () => {
  it('cancel from the API process ends the run worker_lost once the heartbeat expired: cancel returns false', async () => {
    fx = queueFixture();
    const w1 = await fx.worker();
    const { runId } = await fx.runs.start({ agent: 'queue-agent', threadId: 't', input: '!tool 60000', principal: P });
    await firstOf(fx.runs.events(runId, { principal: P }), 'tool_call_started');
    w1.child.kill('SIGKILL');
    await w1.exited;
    expect(await fx.runs.cancel(runId, 'stop', P)).toBe(false);
    const events = await allEvents(fx.runs.events(runId, { principal: P }));
    expect(events.filter(isTerminalEvent).map((e) => [e.type, e.stopReason])).toEqual([['run_failed', 'worker_lost']]);
    expect(gapless(events)).toBe(true);
    // A worker that comes later finds the stalled job's run ended and writes nothing.
    await fx.worker();
    await sleep(3500);
    expect(await allEvents(fx.runs.events(runId, { principal: P }))).toHaveLength(events.length);
  }, 90_000);
});

describe('queueRuns faults: SIGTERM drain', () => {
  it('stops taking jobs, lets runs end or cancels them after shutdownGraceMs, exits 0 with every terminal stored', async () => {
    fx = queueFixture();
    const w = await fx.worker({ shutdownGraceMs: 1500 });
    const short = await fx.runs.start({ agent: 'queue-agent', threadId: 'a', input: '!tool 500', principal: P });
    const long = await fx.runs.start({ agent: 'queue-agent', threadId: 'b', input: '!tool 60000', principal: P });
    await firstOf(fx.runs.events(long.runId, { principal: P }), 'tool_call_started');
    await firstOf(fx.runs.events(short.runId, { principal: P }), 'tool_call_started');
    w.child.kill('SIGTERM');
    await sleep(200);
    const later = await fx.runs.start({ agent: 'queue-agent', threadId: 'c', input: 'hello', principal: P });
    expect(await w.exited).toBe(0);
    expect(w.out()).toContain('drained');
    const run = (id: string) => fx!.redis.hmget(`${fx!.prefix}:${fx!.queue}:lc:run:${id}`, 'state', 'terminal');
    expect(await run(short.runId)).toEqual(['ended', 'run_completed']);
    expect(await run(long.runId)).toEqual(['ended', 'run_cancelled']);
    expect(await run(later.runId)).toEqual(['queued', null]); // not taken by the draining worker
    const events = await allEvents(fx.runs.events(long.runId, { principal: P }));
    // Cancelled after the grace: by the worker (worker_shutdown), or by run control's graceful stop timing out.
    const terminal = events.at(-1)!;
    expect(terminal).toMatchObject({ type: 'run_cancelled', phase: 'tool_call' });
    expect(['worker_shutdown', 'stop_timeout']).toContain((terminal as { reason: { type: string } }).reason.type);
    await fx.worker(); // another worker takes the queued run
    expect((await allEvents(fx.runs.events(later.runId, { principal: P }))).at(-1)!.type).toBe('run_completed');
  }, 90_000);
});

describe('queueRuns faults: Redis unreachable mid-run', () => {
  const PORT = 6390 + (process.pid % 50);
  const dir = mkdtempSync(path.join(tmpdir(), 'loopctl-redis-'));
  const startRedis = () =>
    execFileSync('redis-server', [
      '--port',
      String(PORT),
      '--bind',
      '127.0.0.1',
      '--save',
      '',
      '--appendonly',
      'yes',
      '--appendfsync',
      'always',
      '--dir',
      dir,
      '--daemonize',
      'yes',
      '--pidfile',
      path.join(dir, 'redis.pid'),
    ]);
  const stopRedis = () => {
    try {
      execFileSync('redis-cli', ['-p', String(PORT), 'shutdown']);
    } catch {
      // it is down already
    }
  };
  afterAll(() => {
    stopRedis();
    rmSync(dir, { recursive: true, force: true });
  });
  const waitUp = async () => {
    for (let i = 0; i < 100; i++) {
      try {
        execFileSync('redis-cli', ['-p', String(PORT), 'ping']);
        return;
      } catch {
        await sleep(50);
      }
    }
  };

  it('back within eventStoreOutageMs: the buffered events are written and the run completes', async () => {
    startRedis();
    await waitUp();
    fx = queueFixture({ url: `redis://127.0.0.1:${PORT}` });
    await fx.worker({ lockDurationMs: 10_000, eventStoreOutageMs: 8000 });
    const { runId } = await fx.runs.start({
      agent: 'queue-agent',
      threadId: 't',
      input: '!stream 40 100',
      principal: P,
    });
    const seen: RunEvent[] = [];
    const done = new Promise<void>((resolve, reject) =>
      fx!.runs
        .events(runId, { principal: P })
        .subscribe({ next: (e) => seen.push(e), complete: resolve, error: reject }),
    );
    await firstOf(fx.runs.events(runId, { principal: P }), 'text_delta');
    stopRedis();
    await sleep(1000);
    startRedis();
    await done;
    expect(gapless(seen)).toBe(true);
    expect(seen.at(-1)).toMatchObject({ type: 'run_completed' });
    expect(seen.filter((e) => e.type === 'text_delta')).toHaveLength(40);
  }, 90_000);

  it('not back within eventStoreOutageMs: cancelled (event_store_unavailable), terminal written when Redis returns', async () => {
    startRedis();
    await waitUp();
    fx = queueFixture({ url: `redis://127.0.0.1:${PORT}` });
    await fx.worker({ eventStoreOutageMs: 1000 });
    const { runId } = await fx.runs.start({
      agent: 'queue-agent',
      threadId: 't',
      input: '!stream 400 50',
      principal: P,
    });
    await firstOf(fx.runs.events(runId, { principal: P }), 'text_delta');
    stopRedis();
    await sleep(2500);
    startRedis();
    // While its connection is down queueRuns refuses a new reader at once (QueueUnavailableError); read once it
    // answers again.
    await vi.waitFor(() => expect(fx!.runs.unavailable).toBeUndefined(), { timeout: 20_000, interval: 50 });
    const events = await allEvents(fx.runs.events(runId, { principal: P }));
    expect(gapless(events)).toBe(true);
    expect(events.filter(isTerminalEvent)).toHaveLength(1);
    expect(events.at(-1)).toMatchObject({ type: 'run_cancelled', reason: { type: 'event_store_unavailable' } });
  }, 90_000);
});
