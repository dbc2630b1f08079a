/**
 * loopctl/http under load (issue 20): N concurrent SSE clients (default 1 000, in a child process: only the
 * server's CPU is measured here) each start a scripted run through `createHandler` over `localRuns` and
 * stream it to the end, against a bare `node:http` SSE writer that sends the same frames (same JSON, same
 * cadence) in the same process. Per round and server:
 *  - CPU per event: this process's CPU time (user + system) from the first request to the last stream's
 *    end, divided by the SSE frames the clients received;
 *  - heap per connection: `heapUsed` after a full GC with every stream open and paused mid-run (each run
 *    has streamed all its deltas and waits on a gate; the text message is open), minus the heap before,
 *    divided by N. loopctl's figure includes the live run itself (engine state, the replay of its events).
 * Rounds alternate the two servers; medians with min–max over BENCH_ROUNDS (default 3) rounds. Then one run
 * fanned out to many readers at 10 deltas/s: CPU per event and p50/p99 lag behind schedule
 * (bench/http-fanout.ts), and the web app's click-to-close latency in Chromium (bench/http-click.ts).
 */
import { fork } from 'node:child_process';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Subject, concat, ignoreElements, map, of, take, timer } from 'rxjs';
import type { ModelEvent, ModelProvider, ModelResponse } from '../src/index.js';
import type * as Http from '../src/http/index.js';
import { LIB_LABEL, lib, loadEntry } from './lib/loopctl.js';
import { cpuSince, fmt, fullGc, median, printTable } from './lib/stats.js';
import { clickToClose } from './http-click.js';
import { fanout } from './http-fanout.js';

const { defineAgent, localRuns } = lib;
const { createHandler } = (await loadEntry('http/index')) as typeof Http;

const N = Number(process.env['BENCH_CLIENTS'] ?? 1000);
const DELTAS = Number(process.env['BENCH_DELTAS'] ?? 40);
const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 3);
const DELTA_MS = 2;
/** Frames before the pause: RUN_STARTED, STEP_STARTED, TEXT_MESSAGE_START, DELTAS × CONTENT. */
const HOLD_FRAMES = DELTAS + 3;
const delta = (i: number) => `word${i} `;

interface Server_ {
  readonly url: string;
  release(): void;
  close(): Promise<void>;
}

async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', 4096, resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** loopctl/http over localRuns: each run streams DELTAS deltas, then waits for the shared gate. */
async function loopctlServer(): Promise<Server_> {
  const gate = new Subject<void>();
  const response: ModelResponse = {
    text: Array.from({ length: DELTAS }, (_, i) => delta(i)).join(''),
    toolCalls: [],
    finishReason: 'stop',
    usage: { inputTokens: 1, outputTokens: DELTAS, totalTokens: DELTAS + 1 },
  };
  // A stateless model: every call streams the deltas DELTA_MS apart, waits for the gate, then answers.
  const model: ModelProvider = {
    id: 'bench',
    stream: true,
    call: () =>
      concat(
        timer(0, DELTA_MS).pipe(
          take(DELTAS),
          map((i): ModelEvent => ({ type: 'text_delta', delta: delta(i) })),
        ),
        gate.pipe(take(1), ignoreElements()),
        of<ModelEvent>({ type: 'response', response }),
      ),
  };
  const runs = localRuns({
    agents: { bench: defineAgent({ name: 'bench', instructions: 'i', model }) },
    retainFinishedRuns: 0,
  });
  const handler = createHandler({ runs, authorize: () => 'bench' });
  const server = createServer((req, res) => handler(req, res));
  const url = `${await listen(server)}/agents/bench/runs`;
  return { url, release: () => gate.next(), close: () => closeServer(server) };
}

/** The same frames written by hand: `id:` + `data:` lines, one timer per delta, then the gate. */
async function bareServer(): Promise<Server_> {
  const waiting: (() => void)[] = [];
  let released = false;
  const frame = (res: ServerResponse, id: number, event: object) =>
    res.write(`id: ${id}\ndata: ${JSON.stringify(event)}\n\n`);
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      const { threadId } = JSON.parse(body) as { threadId: string };
      const runId = globalThis.crypto.randomUUID();
      const messageId = `loopctl:${runId}:m2`;
      res.writeHead(200, {
        'Content-Type': 'text/event-stream; charset=utf-8',
        'Cache-Control': 'no-cache, no-transform',
      });
      frame(res, 0, { type: 'RUN_STARTED', timestamp: Date.now(), threadId, runId });
      frame(res, 1, { type: 'STEP_STARTED', timestamp: Date.now(), stepName: 'turn 1' });
      let i = 0;
      const next = () => {
        if (i < DELTAS) {
          const content = { type: 'TEXT_MESSAGE_CONTENT', timestamp: Date.now(), messageId, delta: delta(i) };
          if (i === 0)
            frame(res, 3, { type: 'TEXT_MESSAGE_START', timestamp: Date.now(), messageId, role: 'assistant' });
          frame(res, 3 + i++, content);
          setTimeout(next, DELTA_MS);
          return;
        }
        const finish = () => {
          frame(res, 4 + DELTAS, { type: 'TEXT_MESSAGE_END', timestamp: Date.now(), messageId });
          frame(res, 5 + DELTAS, { type: 'STEP_FINISHED', timestamp: Date.now(), stepName: 'turn 1' });
          frame(res, 7 + DELTAS, {
            type: 'RUN_FINISHED',
            timestamp: Date.now(),
            threadId,
            runId,
            outcome: { type: 'success' },
          });
          res.end();
        };
        if (released) finish();
        else waiting.push(finish);
      };
      next();
    });
  });
  const url = `${await listen(server)}/agents/bench/runs`;
  return {
    url,
    release: () => {
      released = true;
      for (const f of waiting.splice(0)) f();
    },
    close: () => closeServer(server),
  };
}

function closeServer(server: Server): Promise<void> {
  server.closeAllConnections();
  return new Promise((resolve) => server.close(() => resolve()));
}

const clients = fork(path.join(path.dirname(fileURLToPath(import.meta.url)), 'http-clients.ts'), [], {
  execArgv: ['--import', import.meta.resolve('tsx')],
  stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
});
const fromClients = (key: string) =>
  new Promise<Record<string, number>>((resolve, reject) => {
    const on = (m: Record<string, unknown>) => {
      if ('error' in m) reject(new Error(String(m['error'])));
      if (key in m) {
        clients.off('message', on);
        resolve(m as Record<string, number>);
      }
    };
    clients.on('message', on);
  });
await fromClients('ready');

const BODY = JSON.stringify({
  threadId: '__THREAD__',
  runId: 'bench',
  messages: [{ id: 'u1', role: 'user', content: 'go' }],
  tools: [],
  context: [],
});

async function round(
  make: () => Promise<Server_>,
): Promise<{ cpuPerEvent: number; heapPerConn: number; frames: number }> {
  const server = await make();
  await fullGc();
  const base = process.memoryUsage().heapUsed;
  const cpu0 = process.cpuUsage();
  const held = fromClients('held');
  clients.send({ url: server.url, n: N, holdFrames: HOLD_FRAMES, bodyTemplate: BODY });
  await held;
  const cpuHeld = process.cpuUsage(cpu0);
  await fullGc();
  const heapPerConn = (process.memoryUsage().heapUsed - base) / N;
  const cpu1 = process.cpuUsage();
  const done = fromClients('done');
  server.release();
  const { frames } = await done;
  const cpu = cpuHeld.user + cpuHeld.system + cpuSince(cpu1);
  await server.close();
  if (frames !== N * (DELTAS + 6)) throw new Error(`expected ${N * (DELTAS + 6)} frames, got ${frames}`);
  return { cpuPerEvent: cpu / frames, heapPerConn, frames: frames! };
}

export async function main(): Promise<void> {
  console.log(
    `${N} concurrent SSE clients, ${DELTAS + 6} frames each (${DELTAS} deltas ${DELTA_MS} ms apart), ` +
      `${ROUNDS} rounds; library: ${LIB_LABEL}`,
  );
  type Round = { cpuPerEvent: number; heapPerConn: number };
  const results: Record<'loopctl' | 'bare', Round[]> = { loopctl: [], bare: [] };
  await round(loopctlServer); // warm-up, not counted
  await round(bareServer);
  for (let r = 0; r < ROUNDS; r++) {
    results.loopctl.push(await round(loopctlServer));
    results.bare.push(await round(bareServer));
  }
  const stat = (xs: number[], digits: number) =>
    `${fmt(median(xs), digits)} (${fmt(Math.min(...xs), digits)}–${fmt(Math.max(...xs), digits)})`;
  const cpu = (k: keyof typeof results) => results[k].map((x) => x.cpuPerEvent);
  const heap = (k: keyof typeof results) => results[k].map((x) => x.heapPerConn / 1024);
  const ratio = (a: number[], b: number[]) => a.map((x, i) => x / b[i]!);
  printTable('per SSE event and per open connection (median, min–max)', [
    ['server', 'CPU µs / event', 'heap KiB / connection'],
    ['loopctl/http + localRuns', stat(cpu('loopctl'), 2), stat(heap('loopctl'), 1)],
    ['bare node:http SSE writer', stat(cpu('bare'), 2), stat(heap('bare'), 1)],
    [
      'ratio (round by round)',
      `${stat(ratio(cpu('loopctl'), cpu('bare')), 2)}×`,
      `${stat(ratio(heap('loopctl'), heap('bare')), 2)}×`,
    ],
  ]);
  clients.disconnect();
  // One run to many readers, paced (bench/http-fanout.ts); BENCH_FANOUT_CLIENTS=0 leaves it out.
  if (Number(process.env['BENCH_FANOUT_CLIENTS'] ?? 1000) > 0) await fanout();
  // The web app's Stop, end to end in Chromium (bench/http-click.ts); BENCH_CLICKS=0 leaves it out.
  if (Number(process.env['BENCH_CLICKS'] ?? 30) > 0) await clickToClose();
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
