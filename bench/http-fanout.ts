/**
 * loopctl/http fan-out: one run (or BENCH_FANOUT_RUNS runs) streamed to many SSE readers. BENCH_FANOUT_CLIENTS
 * readers (default 1 000, in a child process: only the server's CPU is measured here) attach with
 * `GET /runs/:runId/events` to runs started with `runs.start` over `localRuns`, spread evenly over the runs;
 * once all are attached, each run streams BENCH_FANOUT_DELTAS deltas (default 30) at 10 per second (every
 * reader gets 10 deltas/s) and ends. Against a bare `node:http` SSE writer that sends the same frames (same
 * JSON, same cadence, each frame encoded once and written to every reader of its run) in the same process.
 * Per round and server:
 *  - CPU per SSE event: this process's CPU time (user + system) from the first reader's request to the last
 *    stream's end, divided by the SSE frames the readers received; and its streaming part, from the release
 *    of the deltas (every reader attached) to the end, with the garbage collections in it (number, ms);
 *  - lag behind schedule: every delta carries the time it was due (`@<epoch ms>`, run start + i × 100 ms);
 *    a reader's arrival time minus that, p50 and p99 over every delta every reader received; the producers'
 *    own lateness (max) and the server's busy time per delta ({@link FanoutServer.late}, `busy`);
 *  - the readers' CPU per event: the readers' process's CPU time over the same span, divided by the frames.
 * The readers (bench/http-fanout-clients.ts) are raw `node:net` sockets that scan the bytes once (`net`, the
 * default), or `node:http`'s client (`http`); BENCH_FANOUT_READERS=net,http measures both, in the same rounds.
 * With BENCH_BASELINE_DIR, a second loopctl build is measured in the same rounds (an A/B of a server change).
 * Every round measures every server once per reader kind, in an order rotated from round to round, after one
 * warm-up round of each; medians with min–max over BENCH_ROUNDS (default 3), ratios round by round.
 */
import { fork } from 'node:child_process';
import os from 'node:os';
import { PerformanceObserver } from 'node:perf_hooks';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Observable, Subject, concat, concatMap, map, of, range, switchMap, take, timer } from 'rxjs';
import type { ModelEvent, ModelProvider } from '../src/index.js';
import type * as Http from '../src/http/index.js';
import { LIB_LABEL, builds, type Build } from './lib/loopctl.js';
import { cpuSince, fmt, median, printTable, quantile } from './lib/stats.js';

const CLIENTS = Number(process.env['BENCH_FANOUT_CLIENTS'] ?? 1000);
const RUNS = Number(process.env['BENCH_FANOUT_RUNS'] ?? 1);
const DELTAS = Number(process.env['BENCH_FANOUT_DELTAS'] ?? 30);
const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 3);
const READERS = (process.env['BENCH_FANOUT_READERS'] ?? 'net').split(',').map((r) => {
  if (r !== 'net' && r !== 'http') throw new Error(`BENCH_FANOUT_READERS: 'net' or 'http', not ${r}`);
  return r;
});
const PERIOD_MS = 100;
/** Frames per reader: RUN_STARTED, STEP_STARTED, TEXT_MESSAGE_START, the deltas, TEXT_MESSAGE_END,
 * STEP_FINISHED, RUN_FINISHED. */
const FRAMES = DELTAS + 6;
const delta = (i: number, t0: number) => `w${i}@${t0 + i * PERIOD_MS} `;

interface FanoutServer {
  /** One events URL per run. */
  readonly urls: readonly string[];
  /** Starts every run's deltas, the first due now. */
  release(): void;
  /** How late each delta was emitted, ms after its schedule (the producer's own lateness, before any write). */
  readonly late: number[];
  /**
   * Per delta, ms from its emission to the end of the event-loop turn that emitted it (a `setImmediate`): the
   * server's work for it, the socket writes included (node:http uncorks a socket on the next tick).
   */
  readonly busy: number[];
  close(): Promise<void>;
}

async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', 4096, resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

function closeServer(server: Server): Promise<void> {
  server.closeAllConnections();
  return new Promise((resolve) => server.close(() => resolve()));
}

/** Pushes to `busy` the ms from now to the end of this event-loop turn ({@link FanoutServer.busy}). */
function measureBusy(busy: number[]): void {
  const at = performance.now();
  setImmediate(() => busy.push(performance.now() - at));
}

/**
 * 0, 1, …, DELTAS − 1, value i at `t0 + i × PERIOD_MS` (epoch ms): each at its own time, so a late one does not
 * push the next ones back. (`timer(0, PERIOD_MS)` and `setInterval` count each period from when the previous
 * callback ran, so their lateness adds up: on this machine, at load average 5, 38 ms after 30 ticks.)
 */
function onSchedule(t0: number): Observable<number> {
  return range(0, DELTAS).pipe(concatMap((i) => timer(new Date(t0 + i * PERIOD_MS)).pipe(map(() => i))));
}

/**
 * How the producers time their deltas: `schedule` (the default), each at its own time (`onSchedule`);
 * `interval`, the producers of the first version of this benchmark (`timer(0, PERIOD_MS)` and `setInterval`),
 * whose lateness adds up. BENCH_FANOUT_PRODUCERS=schedule,interval measures both in the same rounds.
 */
type Producer = 'schedule' | 'interval';
const PRODUCERS = (process.env['BENCH_FANOUT_PRODUCERS'] ?? 'schedule').split(',').map((p): Producer => {
  if (p !== 'schedule' && p !== 'interval')
    throw new Error(`BENCH_FANOUT_PRODUCERS: 'schedule' or 'interval', not ${p}`);
  return p;
});

/** loopctl/http over localRuns: RUNS runs wait for the gate, then stream their deltas on schedule (`onSchedule`). */
async function loopctlServer(build: Build, producer: Producer): Promise<FanoutServer> {
  const late: number[] = [];
  const busy: number[] = [];
  const { defineAgent, localRuns } = build.lib;
  const { createHandler } = (await build.load('http/index')) as typeof Http;
  const gate = new Subject<number>();
  const model: ModelProvider = {
    id: 'bench',
    stream: true,
    call: () =>
      gate.pipe(
        take(1),
        switchMap((t0) => {
          const text = Array.from({ length: DELTAS }, (_, i) => delta(i, t0)).join('');
          return concat(
            (producer === 'schedule' ? onSchedule(t0) : timer(0, PERIOD_MS).pipe(take(DELTAS))).pipe(
              map((i): ModelEvent => {
                late.push(Date.now() - (t0 + i * PERIOD_MS));
                measureBusy(busy);
                return { type: 'text_delta', delta: delta(i, t0) };
              }),
            ),
            of<ModelEvent>({
              type: 'response',
              response: {
                text,
                toolCalls: [],
                finishReason: 'stop',
                usage: { inputTokens: 1, outputTokens: DELTAS, totalTokens: DELTAS + 1 },
              },
            }),
          );
        }),
      ),
  };
  const runs = localRuns({
    agents: { bench: defineAgent({ name: 'bench', instructions: 'i', model }) },
    retainFinishedRuns: 0,
  });
  const handler = createHandler({ runs, authorize: () => 'bench' });
  const server = createServer((req, res) => handler(req, res));
  const base = await listen(server);
  const urls: string[] = [];
  for (let r = 0; r < RUNS; r++) {
    const { runId } = await runs.start({ agent: 'bench', threadId: `t${r}`, input: 'go', principal: 'bench' });
    urls.push(`${base}/runs/${encodeURIComponent(runId)}/events?threadId=t${r}`);
  }
  return { urls, release: () => gate.next(Date.now()), late, busy, close: () => closeServer(server) };
}

/** The same frames written by hand: per run one timer at a time, each frame encoded once and written to its readers. */
async function bareServer(producer: Producer): Promise<FanoutServer> {
  const readers: ServerResponse[][] = Array.from({ length: RUNS }, () => []);
  const runIds = Array.from({ length: RUNS }, () => globalThis.crypto.randomUUID());
  const frame = (id: number, event: object) => `id: ${id}\ndata: ${JSON.stringify(event)}\n\n`;
  const send = (r: number, text: string) => {
    for (const res of readers[r]!) res.write(text);
  };
  const server = createServer((req, res) => {
    const r = Number(/threadId=t(\d+)/.exec(req.url ?? '')?.[1]);
    res.writeHead(200, {
      'Content-Type': 'text/event-stream; charset=utf-8',
      'Cache-Control': 'no-cache, no-transform',
      'X-Accel-Buffering': 'no',
    });
    res.write(frame(0, { type: 'RUN_STARTED', timestamp: Date.now(), threadId: `t${r}`, runId: runIds[r] }));
    res.write(frame(1, { type: 'STEP_STARTED', timestamp: Date.now(), stepName: 'turn 1' }));
    readers[r]!.push(res);
  });
  const base = await listen(server);
  const urls = runIds.map((id, r) => `${base}/runs/${id}/events?threadId=t${r}`);
  const late: number[] = [];
  const busy: number[] = [];
  const release = () => {
    const t0 = Date.now();
    runIds.forEach((runId, r) => {
      const messageId = `loopctl:${runId}:m2`;
      let i = 0;
      // The first delta now, then each at its own time (as the loopctl model's `onSchedule`).
      const tick = () => {
        late.push(Date.now() - (t0 + i * PERIOD_MS));
        measureBusy(busy);
        if (i === 0)
          send(r, frame(2, { type: 'TEXT_MESSAGE_START', timestamp: Date.now(), messageId, role: 'assistant' }));
        send(r, frame(3 + i, { type: 'TEXT_MESSAGE_CONTENT', timestamp: Date.now(), messageId, delta: delta(i, t0) }));
        if (++i < DELTAS) {
          if (producer === 'schedule') setTimeout(tick, t0 + i * PERIOD_MS - Date.now());
          return;
        }
        clearInterval(interval);
        send(r, frame(3 + DELTAS, { type: 'TEXT_MESSAGE_END', timestamp: Date.now(), messageId }));
        send(r, frame(4 + DELTAS, { type: 'STEP_FINISHED', timestamp: Date.now(), stepName: 'turn 1' }));
        send(
          r,
          frame(5 + DELTAS, {
            type: 'RUN_FINISHED',
            timestamp: Date.now(),
            threadId: `t${r}`,
            runId,
            outcome: { type: 'success' },
          }),
        );
        for (const res of readers[r]!) res.end();
      };
      const interval = producer === 'interval' ? setInterval(tick, PERIOD_MS) : undefined;
      tick();
    });
  };
  return { urls, release, late, busy, close: () => closeServer(server) };
}

interface Round {
  readonly cpuPerEvent: number;
  /** The part of it spent once every reader was attached (the deltas and the end), per event. */
  readonly streamCpuPerEvent: number;
  /** Garbage collections in that part (`PerformanceObserver` `gc` entries): their number and summed ms. */
  readonly gcs: number;
  readonly gcMs: number;
  /** The readers' process's CPU per event. */
  readonly readerCpuPerEvent: number;
  readonly p50: number;
  readonly p99: number;
  /** The deltas' emission lateness at the producer, max (ms): the part of the lag no write caused. */
  readonly lateMax: number;
  /** The server's work per delta ({@link FanoutServer.busy}), median over the deltas (ms). */
  readonly busy: number;
}

/** The readers' child process (bench/http-fanout-clients.ts), forked by {@link fanout}. */
type Clients = ReturnType<typeof fork>;

function fromClients<T>(clients: Clients, key: string): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const on = (m: Record<string, unknown>) => {
      if ('error' in m) reject(new Error(String(m['error'])));
      if (key in m) {
        clients.off('message', on);
        resolve(m as T);
      }
    };
    clients.on('message', on);
  });
}

async function round(clients: Clients, make: () => Promise<FanoutServer>, reader: string): Promise<Round> {
  const server = await make();
  const cpu0 = process.cpuUsage();
  const attached = fromClients(clients, 'attached');
  clients.send({ urls: server.urls, n: CLIENTS, reader });
  await attached;
  const done = fromClients<{ frames: number; lags: number[]; cpu: number }>(clients, 'done');
  const cpu1 = process.cpuUsage();
  const gcs: number[] = [];
  const gcObserver = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) gcs.push(entry.duration);
  });
  gcObserver.observe({ entryTypes: ['gc'] });
  server.release();
  const { frames, lags, cpu: readerCpu } = await done;
  gcObserver.disconnect();
  const cpu = cpuSince(cpu0);
  const streamCpu = cpuSince(cpu1);
  await server.close();
  if (frames !== CLIENTS * FRAMES) throw new Error(`expected ${CLIENTS * FRAMES} frames, got ${frames}`);
  if (lags.length !== CLIENTS * DELTAS) throw new Error(`expected ${CLIENTS * DELTAS} deltas, got ${lags.length}`);
  return {
    cpuPerEvent: cpu / frames,
    streamCpuPerEvent: streamCpu / frames,
    gcMs: gcs.reduce((a, b) => a + b, 0),
    gcs: gcs.length,
    readerCpuPerEvent: readerCpu / frames,
    p50: quantile(lags, 0.5),
    p99: quantile(lags, 0.99),
    lateMax: Math.max(...server.late),
    busy: median(server.busy),
  };
}

/** A server measured: its row name and how to start it. */
interface Variant {
  readonly name: string;
  readonly make: () => Promise<FanoutServer>;
  /** The bare writer (the reference of the ratios), not a loopctl build. */
  readonly bare: boolean;
}

/** Runs the fan-out rounds and prints their tables (one per reader kind). */
export async function fanout(): Promise<void> {
  const clients = fork(path.join(path.dirname(fileURLToPath(import.meta.url)), 'http-fanout-clients.ts'), [], {
    execArgv: ['--import', import.meta.resolve('tsx')],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  await fromClients(clients, 'ready');
  console.log(
    `fan-out: ${CLIENTS} SSE readers of ${RUNS} run(s), ${FRAMES} frames each (${DELTAS} deltas, ` +
      `${1000 / PERIOD_MS}/s per reader), ${ROUNDS} rounds, readers: ${READERS.join(', ')}, ` +
      `producers: ${PRODUCERS.join(', ')}; library: ${LIB_LABEL}`,
  );
  const named = (name: string, p: Producer) => (PRODUCERS.length > 1 ? `${name} (${p})` : name);
  const variants: Variant[] = PRODUCERS.flatMap((p) => [
    ...builds.map((b) => ({
      name: named(b.name === 'loopctl' ? 'loopctl/http + localRuns' : `${b.name} loopctl/http`, p),
      make: () => loopctlServer(b, p),
      bare: false,
    })),
    { name: named('bare node:http SSE writer', p), make: () => bareServer(p), bare: true },
  ]);
  /** The bare writer of the same producer as variant `v` (the next bare one in the list). */
  const bareOf = (v: number) => variants.findIndex((x, i) => i > v && x.bare);
  const results = READERS.map(() => variants.map((): Round[] => []));
  const loads: string[] = [];
  for (const reader of READERS) for (const v of variants) await round(clients, v.make, reader); // warm-up
  for (let r = 0; r < ROUNDS; r++) {
    loads.push(os.loadavg()[0]!.toFixed(1));
    for (const [k, reader] of READERS.entries()) {
      for (let j = 0; j < variants.length; j++) {
        const v = (j + r) % variants.length;
        results[k]![v]!.push(await round(clients, variants[v]!.make, reader));
      }
    }
  }
  clients.disconnect();
  const stat = (xs: number[], digits: number) =>
    `${fmt(median(xs), digits)} (${fmt(Math.min(...xs), digits)}–${fmt(Math.max(...xs), digits)})`;
  for (const [k, reader] of READERS.entries()) {
    const of_ = (v: number, f: keyof Round) => results[k]![v]!.map((x) => x[f]);
    const ratio = (v: number, f: keyof Round) => of_(v, f).map((x, i) => x / of_(bareOf(v), f)[i]!);
    printTable(
      `fan-out, ${reader} readers: CPU per SSE event and lag behind schedule (median, min–max; ` +
        `load average 1 min at the rounds: ${loads.join(', ')})`,
      [
        [
          'server',
          'CPU µs / event',
          'streaming µs / event',
          'GCs',
          'GC ms',
          'lag p50 ms',
          'lag p99 ms',
          'emitted late, max ms',
          'server busy ms / delta',
          'readers µs / event',
        ],
        ...variants.map((v, i) => [
          v.name,
          stat(of_(i, 'cpuPerEvent'), 2),
          stat(of_(i, 'streamCpuPerEvent'), 2),
          stat(of_(i, 'gcs'), 0),
          stat(of_(i, 'gcMs'), 0),
          stat(of_(i, 'p50'), 0),
          stat(of_(i, 'p99'), 0),
          stat(of_(i, 'lateMax'), 0),
          stat(of_(i, 'busy'), 1),
          stat(of_(i, 'readerCpuPerEvent'), 2),
        ]),
        ...variants
          .map((v, i) => ({ v, i }))
          .filter(({ v }) => !v.bare)
          .map(({ v, i }) => [
            `${v.name} / bare (round by round)`,
            `${stat(ratio(i, 'cpuPerEvent'), 2)}×`,
            `${stat(ratio(i, 'streamCpuPerEvent'), 2)}×`,
            '',
            '',
            '',
            `${stat(ratio(i, 'p99'), 2)}×`,
            '',
            `${stat(ratio(i, 'busy'), 2)}×`,
            '',
          ]),
      ],
    );
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await fanout();
