/**
 * loopctl/http fan-out: one run (or BENCH_FANOUT_RUNS runs) streamed to many SSE readers. BENCH_FANOUT_CLIENTS
 * readers (default 1 000, in a child process: only the server's CPU is measured here) attach with
 * `GET /runs/:runId/events` to runs started with `runs.start` over `localRuns`, spread evenly over the runs;
 * once all are attached, each run streams BENCH_FANOUT_DELTAS deltas (default 30) at 10 per second (every
 * reader gets 10 deltas/s) and ends. Against a bare `node:http` SSE writer that sends the same frames (same
 * JSON, same cadence, each frame encoded once and written to every reader of its run) in the same process.
 * Per round and server:
 *  - CPU per SSE event: this process's CPU time (user + system) from the first reader's request to the last
 *    stream's end, divided by the SSE frames the readers received;
 *  - lag behind schedule: every delta carries the time it was due (`@<epoch ms>`, run start + i × 100 ms);
 *    a reader's arrival time minus that, p50 and p99 over every delta every reader received.
 * Rounds alternate the two servers after one warm-up pair; medians with min–max over BENCH_ROUNDS (default 3).
 */
import { fork } from 'node:child_process';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Subject, concat, map, of, switchMap, take, timer } from 'rxjs';
import type { ModelEvent, ModelProvider } from '../src/index.js';
import type * as Http from '../src/http/index.js';
import { LIB_LABEL, lib, loadEntry } from './lib/loopctl.js';
import { cpuSince, fmt, median, printTable, quantile } from './lib/stats.js';

const { defineAgent, localRuns } = lib;
const { createHandler } = (await loadEntry('http/index')) as typeof Http;

const CLIENTS = Number(process.env['BENCH_FANOUT_CLIENTS'] ?? 1000);
const RUNS = Number(process.env['BENCH_FANOUT_RUNS'] ?? 1);
const DELTAS = Number(process.env['BENCH_FANOUT_DELTAS'] ?? 30);
const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 3);
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

/** loopctl/http over localRuns: RUNS runs wait for the gate, then stream their deltas PERIOD_MS apart. */
async function loopctlServer(): Promise<FanoutServer> {
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
            timer(0, PERIOD_MS).pipe(
              take(DELTAS),
              map((i): ModelEvent => ({ type: 'text_delta', delta: delta(i, t0) })),
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
  return { urls, release: () => gate.next(Date.now()), close: () => closeServer(server) };
}

/** The same frames written by hand: per run one timer, each frame encoded once and written to its readers. */
async function bareServer(): Promise<FanoutServer> {
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
  const release = () => {
    const t0 = Date.now();
    runIds.forEach((runId, r) => {
      const messageId = `loopctl:${runId}:m2`;
      let i = 0;
      // The first delta now, then one every PERIOD_MS (as the loopctl model's `timer(0, PERIOD_MS)`).
      const tick = () => {
        if (i === 0)
          send(r, frame(2, { type: 'TEXT_MESSAGE_START', timestamp: Date.now(), messageId, role: 'assistant' }));
        send(r, frame(3 + i, { type: 'TEXT_MESSAGE_CONTENT', timestamp: Date.now(), messageId, delta: delta(i, t0) }));
        if (++i < DELTAS) return;
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
      const interval = setInterval(tick, PERIOD_MS);
      tick();
    });
  };
  return { urls, release, close: () => closeServer(server) };
}

interface Round {
  readonly cpuPerEvent: number;
  readonly p50: number;
  readonly p99: number;
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

async function round(clients: Clients, make: () => Promise<FanoutServer>): Promise<Round> {
  const server = await make();
  const cpu0 = process.cpuUsage();
  const attached = fromClients(clients, 'attached');
  clients.send({ urls: server.urls, n: CLIENTS });
  await attached;
  const done = fromClients<{ frames: number; lags: number[] }>(clients, 'done');
  server.release();
  const { frames, lags } = await done;
  const cpu = cpuSince(cpu0);
  await server.close();
  if (frames !== CLIENTS * FRAMES) throw new Error(`expected ${CLIENTS * FRAMES} frames, got ${frames}`);
  if (lags.length !== CLIENTS * DELTAS) throw new Error(`expected ${CLIENTS * DELTAS} deltas, got ${lags.length}`);
  return { cpuPerEvent: cpu / frames, p50: quantile(lags, 0.5), p99: quantile(lags, 0.99) };
}

/** Runs the fan-out rounds and prints their table. */
export async function fanout(): Promise<void> {
  const clients = fork(path.join(path.dirname(fileURLToPath(import.meta.url)), 'http-fanout-clients.ts'), [], {
    execArgv: ['--import', import.meta.resolve('tsx')],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  await fromClients(clients, 'ready');
  console.log(
    `fan-out: ${CLIENTS} SSE readers of ${RUNS} run(s), ${FRAMES} frames each (${DELTAS} deltas, ` +
      `${1000 / PERIOD_MS}/s per reader), ${ROUNDS} rounds; library: ${LIB_LABEL}`,
  );
  const results: Record<'loopctl' | 'bare', Round[]> = { loopctl: [], bare: [] };
  await round(clients, loopctlServer); // warm-up, not counted
  await round(clients, bareServer);
  for (let r = 0; r < ROUNDS; r++) {
    results.loopctl.push(await round(clients, loopctlServer));
    results.bare.push(await round(clients, bareServer));
  }
  clients.disconnect();
  const stat = (xs: number[], digits: number) =>
    `${fmt(median(xs), digits)} (${fmt(Math.min(...xs), digits)}–${fmt(Math.max(...xs), digits)})`;
  const of_ = (k: keyof typeof results, f: keyof Round) => results[k].map((x) => x[f]);
  const ratio = (f: keyof Round) => of_('loopctl', f).map((x, i) => x / of_('bare', f)[i]!);
  printTable('fan-out: CPU per SSE event and lag behind schedule (median, min–max)', [
    ['server', 'CPU µs / event', 'lag p50 ms', 'lag p99 ms'],
    [
      'loopctl/http + localRuns',
      stat(of_('loopctl', 'cpuPerEvent'), 2),
      stat(of_('loopctl', 'p50'), 0),
      stat(of_('loopctl', 'p99'), 0),
    ],
    [
      'bare node:http SSE writer',
      stat(of_('bare', 'cpuPerEvent'), 2),
      stat(of_('bare', 'p50'), 0),
      stat(of_('bare', 'p99'), 0),
    ],
    ['ratio (round by round)', `${stat(ratio('cpuPerEvent'), 2)}×`, '', ''],
  ]);
}

if (import.meta.url === `file://${process.argv[1]}`) await fanout();
