/**
 * loopctl/bullmq across processes (issue 21), on the local Redis (127.0.0.1:6379, REDIS_URL to change), with
 * worker child processes (bench/lib/queue-worker.ts) and this process as the API process (`queueRuns`):
 *
 * - cancel latency: BENCH_RUNS (default 1000) runs, one at a time; each streams one delta and holds; from the
 *   `cancel()` call here to `run_cancelled` observed here (through the worker, Redis and back); p50/p99/max;
 * - steering latency: `steer()` here → the worker's in-memory mailbox decided → the answer here, 1000 times into
 *   one run waiting in a tool; and delivery, `steer()` → `user_message_injected` observed here, 200 times into a
 *   run whose turns are 10 ms tool calls (so it includes the wait for the next turn);
 * - throughput: BENCH_QUEUE_RUNS (default 200) CPU-bound runs (500 text deltas, no delay) with worker
 *   concurrency 20, with 1 and then 2 worker processes; runs/s, and each process's CPU time (a worker's from
 *   ready to drained); the core count (the ≥ 1.7× target applies with ≥ 4 cores only);
 * - Redis memory per finished run: `MEMORY USAGE` of each finished run's keys (its state hash and its stream,
 *   compacted at the terminal), and `used_memory` before/after, per run.
 * Wall-clock figures on a shared machine: reported, never asserted.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { filter, firstValueFrom, lastValueFrom, type Observable } from 'rxjs';
import type * as Bull from '../src/bullmq/index.js';
import type { RunEvent } from '../src/index.js';
import { LIB_LABEL, loadEntry } from './lib/loopctl.js';
import { fmt, loadAverage, printTable, summarize } from './lib/stats.js';

const URL_ = process.env['REDIS_URL'] ?? 'redis://127.0.0.1:6379';
const RUNS = Number(process.env['BENCH_RUNS'] ?? 1000);
const THROUGHPUT_RUNS = Number(process.env['BENCH_QUEUE_RUNS'] ?? 200);
const PREFIX = `lcbench${process.pid}`;
/** The queue secret this process and its workers share (each job and command is signed with it). */
const SECRET = randomBytes(32).toString('hex');
const WORKER = fileURLToPath(new URL('./lib/queue-worker.ts', import.meta.url));
const { queueRuns } = (await loadEntry('bullmq/index')) as typeof Bull;
const P = 'bench';
const redis = new Redis(URL_);

interface Worker {
  readonly child: ChildProcess;
  out: string;
  readonly exited: Promise<unknown>;
}

async function worker(queue: string, concurrency: number): Promise<Worker> {
  const child = spawn(
    process.execPath,
    [
      '--import',
      import.meta.resolve('tsx'),
      WORKER,
      JSON.stringify({
        url: URL_,
        queue,
        prefix: PREFIX,
        concurrency,
        secret: SECRET,
      }),
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const w: Worker = { child, out: '', exited: new Promise((resolve) => child.on('exit', resolve)) };
  child.stdout!.on('data', (d: Buffer) => (w.out += d.toString()));
  while (!w.out.includes('ready ')) await new Promise((resolve) => setTimeout(resolve, 20));
  return w;
}

/** Drains the worker (SIGTERM) and resolves with its CPU time in ms. */
async function stop(w: Worker): Promise<number> {
  w.child.kill('SIGTERM');
  await w.exited;
  return Number(/cpu (\d+)/.exec(w.out)?.[1] ?? NaN) / 1000;
}

const first = (events: Observable<RunEvent>, type: RunEvent['type']) =>
  firstValueFrom(events.pipe(filter((e) => e.type === type)));

async function cancelLatency(): Promise<string[][]> {
  const queue = 'cancel';
  const w = await worker(queue, 50);
  const runs = queueRuns({ connection: URL_, queue, prefix: PREFIX, secret: SECRET });
  const observed: number[] = [];
  const returned: number[] = [];
  for (let i = 0; i < RUNS + 20; i++) {
    const { runId } = await runs.start({ agent: 'bench', threadId: `c${i}`, input: 'hold', principal: P });
    const events = runs.events(runId, { principal: P });
    await first(events, 'text_delta');
    const cancelled = first(events, 'run_cancelled');
    const t = performance.now();
    const call = runs.cancel(runId, 'bench', P).then(() => performance.now() - t);
    await cancelled;
    const seen = performance.now() - t;
    const back = await call;
    if (i >= 20) {
      observed.push(seen);
      returned.push(back);
    }
  }
  await runs.close();
  await stop(w);
  const a = summarize(observed);
  const b = summarize(returned);
  return [
    ['from cancel() here to…', 'n', 'p50 ms', 'p99 ms', 'max ms'],
    ['run_cancelled observed here', String(a.n), fmt(a.p50, 2), fmt(a.p99, 2), fmt(a.max, 2)],
    ['cancel() resolved (terminal stored)', String(b.n), fmt(b.p50, 2), fmt(b.p99, 2), fmt(b.max, 2)],
  ];
}

async function steeringLatency(): Promise<string[][]> {
  const queue = 'steer';
  const w = await worker(queue, 5);
  const runs = queueRuns({ connection: URL_, queue, prefix: PREFIX, secret: SECRET });
  const { runId } = await runs.start({ agent: 'bench', threadId: 's', input: 'wait', principal: P });
  await first(runs.events(runId, { principal: P }), 'tool_call_started');
  const acks: number[] = [];
  for (let i = 0; i < 1020; i++) {
    const t = performance.now();
    await runs.steer(runId, `s${i}`, P);
    if (i >= 20) acks.push(performance.now() - t);
  }
  await runs.cancel(runId, 'done', P);
  const tick = await runs.start({ agent: 'bench', threadId: 't', input: 'tick', principal: P });
  const events = runs.events(tick.runId, { principal: P });
  await first(events, 'tool_call_started');
  const delivered: number[] = [];
  for (let i = 0; i < 220; i++) {
    const t = performance.now();
    const { id } = await runs.steer(tick.runId, `d${i}`, P);
    await firstValueFrom(events.pipe(filter((e) => e.type === 'user_message_injected' && e.id === id)));
    if (i >= 20) delivered.push(performance.now() - t);
  }
  await runs.cancel(tick.runId, 'done', P);
  await runs.close();
  await stop(w);
  const a = summarize(acks);
  const b = summarize(delivered);
  return [
    ['steer() here to…', 'n', 'p50 ms', 'p99 ms', 'max ms'],
    ["the worker's mailbox decided (steer resolved)", String(a.n), fmt(a.p50, 2), fmt(a.p99, 2), fmt(a.max, 2)],
    ['user_message_injected observed (10 ms turns)', String(b.n), fmt(b.p50, 2), fmt(b.p99, 2), fmt(b.max, 2)],
  ];
}

async function throughput(workers: number): Promise<{ row: string[]; queue: string; runIds: string[] }> {
  const queue = `tp${workers}`;
  const ws = await Promise.all(Array.from({ length: workers }, () => worker(queue, 20)));
  const runs = queueRuns({ connection: URL_, queue, prefix: PREFIX, secret: SECRET });
  const cpu0 = process.cpuUsage();
  const t = performance.now();
  const runIds = await Promise.all(
    Array.from({ length: THROUGHPUT_RUNS }, async (_, i) => {
      const { runId } = await runs.start({ agent: 'bench', threadId: `t${i}`, input: 'cpu 500', principal: P });
      await lastValueFrom(runs.events(runId, { principal: P }));
      return runId;
    }),
  );
  const wall = performance.now() - t;
  const api = process.cpuUsage(cpu0);
  await runs.close();
  const cpus = await Promise.all(ws.map(stop));
  const row = [
    `${workers} worker process${workers > 1 ? 'es' : ''}`,
    String(THROUGHPUT_RUNS),
    fmt(wall / 1000, 2),
    fmt(THROUGHPUT_RUNS / (wall / 1000), 1),
    cpus.map((c) => fmt(c / 1000, 2)).join(' + '),
    fmt((api.user + api.system) / 1e6, 2),
  ];
  return { row, queue, runIds };
}

async function memory(queue: string, runIds: readonly string[]): Promise<string[][]> {
  const ns = `${PREFIX}:${queue}:lc`;
  let state = 0;
  let stream = 0;
  for (const id of runIds) {
    state += Number(await redis.call('MEMORY', 'USAGE', `${ns}:run:${id}`, 'SAMPLES', '0'));
    stream += Number(await redis.call('MEMORY', 'USAGE', `${ns}:run:${id}:events`, 'SAMPLES', '0'));
  }
  const entries = await redis.xlen(`${ns}:run:${runIds[0]}:events`);
  const n = runIds.length;
  return [
    ['per finished run (500 deltas, compacted)', 'bytes'],
    ['run state (hash)', fmt(state / n, 0)],
    [`event stream (${entries} entries)`, fmt(stream / n, 0)],
    ['total', fmt((state + stream) / n, 0)],
  ];
}

async function cleanup(): Promise<void> {
  const keys = await redis.keys(`${PREFIX}:*`);
  for (let i = 0; i < keys.length; i += 500) await redis.del(...keys.slice(i, i + 500));
}

try {
  console.log(`library: ${LIB_LABEL}; Redis ${URL_}; ${availableParallelism()} cores; load ${await loadAverage()}`);
  printTable('Cross-process cancel latency (API process → worker → Redis → API process)', await cancelLatency());
  printTable('Cross-process steering latency', await steeringLatency());
  const before = Number(/used_memory:(\d+)/.exec(await redis.info('memory'))?.[1]);
  const one = await throughput(1);
  const after = Number(/used_memory:(\d+)/.exec(await redis.info('memory'))?.[1]);
  const two = await throughput(2);
  const head = ['', 'runs', 'wall s', 'runs/s', 'worker CPU s', 'API CPU s'];
  printTable(
    `Throughput: CPU-bound runs (500 deltas, no delay), worker concurrency 20, ${availableParallelism()} cores`,
    [head, one.row, two.row],
  );
  const rows = await memory(one.queue, one.runIds);
  rows.push([`used_memory delta / run (queue, jobs, keys)`, fmt((after - before) / one.runIds.length, 0)]);
  printTable('Redis memory per finished run', rows);
} finally {
  await cleanup();
  redis.disconnect();
}
