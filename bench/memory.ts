/**
 * Memory per concurrent idle run, and cleanup after cancelling them all
 * (issue 11, bench 4). Node runs with --expose-gc; heap figures are
 * `process.memoryUsage().heapUsed` after a full GC, divided by the number of
 * runs; `external` (Buffers, ArrayBuffers: socket and stream buffers) is
 * reported apart.
 *
 *  - stalled streams: N runs (`run()` + `openaiChat`) each reading an SSE
 *    stream that sent one chunk and then stays open and silent (the
 *    child-process server holds the sockets), vs the bare `openai` SDK
 *    holding N such streams (each iterated, waiting for its next chunk).
 *    Both use a private undici Agent (lib/child-server.ts `privateFetch`),
 *    created before the baseline, so the sockets they leave can be counted
 *    and then closed;
 *  - tool gate: N runs whose tool waits on a shared Subject (no socket, no
 *    timer), with a stateless instant model (bench/lib/models.ts);
 *  - then everything is cancelled at once (one shared CancelSignal; for the
 *    SDK, every AbortController in a loop): time until cancel() returns (and
 *    how many terminal events had arrived by then), until every run / loop
 *    settled, until the server has no request in progress (every in-flight
 *    HTTP request was aborted at the server), the sockets left in undici's
 *    pool (it reconnects once after each aborted stream: see privateFetch),
 *    then, after closing that pool and a full GC, the heap vs the baseline and
 *    `process.getActiveResourcesInfo()` vs the baseline.
 * Streams are opened in batches of 500 (the listen backlog is 4 096 here).
 */
import OpenAI from 'openai';
import { Subject, take } from 'rxjs';
import type { Agent, CancelSignal as CancelSignalType } from '../src/index.js';
import { epochNow, privateFetch, socketFds, startChildServer, type ChildServer } from './lib/child-server.js';
import { lib, LIB_LABEL } from './lib/loopctl.js';
import { instantToolModel } from './lib/models.js';
import { fmt, fullGc, printTable, resourceCounts, resourceDelta, sleep } from './lib/stats.js';

const { CancelSignal, defineAgent, run, tool, openaiChat } = lib;
const BATCH = 500;

interface Measured {
  readonly label: string;
  readonly n: number;
  readonly heapPerRun: number;
  readonly externalPerRun: number;
  readonly rssPerRun: number;
  /** How long cancel() / the abort loop took (ms), and how many terminal events had arrived when it returned. */
  readonly cancelCallMs: number;
  readonly terminalsAtReturn: number;
  /** Every run / loop settled (ms after the cancel started). */
  readonly settledMs: number;
  /** The server had no request in progress any more (ms after the cancel started). */
  readonly serverIdleMs: number | undefined;
  /** Sockets of this process beyond the baseline once settled (idle sockets in the private pool). */
  readonly pooledSockets: number | undefined;
  readonly heapAfterVsBaseline: number;
  readonly left: string;
}

const mem = () => process.memoryUsage();

async function until(cond: () => boolean, timeoutMs = 120_000): Promise<void> {
  const end = performance.now() + timeoutMs;
  while (!cond()) {
    if (performance.now() > end) throw new Error('timed out waiting');
    await sleep(1);
  }
}

interface Subject_ {
  /** Starts item i; it calls `idle()` once it waits, `ended()` once it ends. */
  start(i: number, idle: () => void, ended: () => void): void;
  cancelAll(): void;
  /** Closes what the item's transport left (the private pool). */
  dispose?(): Promise<void>;
}

async function measure(label: string, n: number, server: ChildServer | undefined, make: () => Promise<Subject_>): Promise<Measured> {
  const subject = await make();
  await fullGc();
  const baseResources = resourceCounts();
  const baseFds = socketFds();
  const base = mem();
  let idle = 0;
  let ended = 0;
  for (let i = 0; i < n; i += BATCH) {
    const upto = Math.min(n, i + BATCH);
    for (let j = i; j < upto; j++) subject.start(j, () => idle++, () => ended++);
    await until(() => idle >= upto);
  }
  await fullGc();
  const held = mem();
  const t0 = performance.now();
  const e0 = epochNow();
  subject.cancelAll();
  const cancelCallMs = performance.now() - t0;
  const terminalsAtReturn = ended;
  await until(() => ended >= n);
  const settledMs = performance.now() - t0;
  let serverIdleMs: number | undefined;
  let pooledSockets: number | undefined;
  if (server) {
    serverIdleMs = (await server.whenIdle()) - e0;
    await sleep(100);
    pooledSockets = socketFds() - baseFds;
  }
  await subject.dispose?.();
  await sleep(50);
  await fullGc();
  const after = mem();
  return {
    label,
    n,
    heapPerRun: (held.heapUsed - base.heapUsed) / n,
    externalPerRun: (held.external - base.external) / n,
    rssPerRun: (held.rss - base.rss) / n,
    cancelCallMs,
    terminalsAtReturn,
    settledMs,
    serverIdleMs,
    pooledSockets,
    heapAfterVsBaseline: (after.heapUsed - base.heapUsed) / base.heapUsed,
    left: resourceDelta(baseResources),
  };
}

const sdkStreams = (server: ChildServer, n: number) =>
  measure('bare SDK, stalled stream', n, server, async () => {
    const transport = await privateFetch();
    const client = new OpenAI({ baseURL: server.baseURL, apiKey: 'k', maxRetries: 0, fetch: transport.fetch });
    let controllers: AbortController[] = [];
    return {
      start(i, idle, ended) {
        const controller = (controllers[i] = new AbortController());
        void (async () => {
          try {
            const stream = await client.chat.completions.create(
              { model: 'hold:1', messages: [{ role: 'user', content: 'go' }], stream: true, stream_options: { include_usage: true } },
              { signal: controller.signal, maxRetries: 0, timeout: 600_000 },
            );
            let text = '';
            for await (const chunk of stream) {
              const delta = chunk.choices[0]?.delta?.content;
              if (delta) (text += delta), idle();
            }
          } catch {
            /* aborted */
          } finally {
            ended();
          }
        })();
      },
      cancelAll() {
        for (const c of controllers) c.abort();
        controllers = [];
      },
      dispose: transport.destroy,
    };
  });

/** N runs of `agent`, all on one shared CancelSignal; a run is idle at its `idleOn` event. */
const runs = (label: string, n: number, server: ChildServer | undefined, agentOf: () => Promise<{ agent: Agent; dispose?: () => Promise<void> }>, idleOn: string) =>
  measure(label, n, server, async () => {
    const { agent, dispose } = await agentOf();
    let cancel: CancelSignalType = new CancelSignal();
    return {
      start(_i, idle, ended) {
        run(agent, 'go', { cancel }).subscribe({
          next: (e) => {
            if (e.type === idleOn) idle();
            else if (e.type === 'run_cancelled' || e.type === 'run_completed' || e.type === 'run_failed') ended();
          },
        });
      },
      cancelAll() {
        cancel.cancel('bench: cancel all');
        cancel = new CancelSignal();
      },
      ...(dispose ? { dispose } : {}),
    };
  });

export async function main(): Promise<void> {
  const server = await startChildServer();
  const streamAgent = async () => {
    const transport = await privateFetch();
    const client = new OpenAI({ baseURL: server.baseURL, apiKey: 'k', maxRetries: 0, fetch: transport.fetch });
    return { agent: defineAgent({ name: 'bench', instructions: '', model: openaiChat({ model: 'hold:1', client }) }), dispose: transport.destroy };
  };
  const gate$ = new Subject<string>();
  const wait = tool({ name: 'wait', description: 'waits for the gate', parameters: { type: 'object', properties: {} }, execute: () => gate$.pipe(take(1)) });
  const gateAgent = async () => ({ agent: defineAgent({ name: 'bench', instructions: '', model: instantToolModel(2, 'wait'), tools: [wait] }) });

  // warm-up: code paths compiled before any baseline
  await sdkStreams(server, 300);
  await runs('warm-up', 300, server, streamAgent, 'text_delta');
  await runs('warm-up', 300, undefined, gateAgent, 'tool_call_started');

  const sizes = (process.env['BENCH_SIZES'] ?? '1000,10000').split(',').map(Number);
  const results: Measured[] = [];
  for (const n of sizes) {
    results.push(await sdkStreams(server, n));
    results.push(await runs('run() + openaiChat, stalled stream', n, server, streamAgent, 'text_delta'));
  }
  for (const n of sizes) results.push(await runs('run(), idle on a tool gate (no socket)', n, undefined, gateAgent, 'tool_call_started'));

  const kb = (bytes: number) => fmt(bytes / 1024, 2);
  printTable(`memory per concurrent idle run (heapUsed after a full GC; KiB = 1 024 B) — ${LIB_LABEL}`, [
    ['what', 'runs', 'heap KiB/run', 'external KiB/run', 'rss KiB/run'],
    ...results.map((r) => [r.label, String(r.n), kb(r.heapPerRun), kb(r.externalPerRun), kb(r.rssPerRun)]),
  ]);
  for (const n of sizes) {
    const sdk = results.find((r) => r.n === n && r.label.startsWith('bare SDK'))!;
    const ours = results.find((r) => r.n === n && r.label.startsWith('run() + openaiChat'))!;
    console.log(`${n} stalled streams: run() ${kb(ours.heapPerRun)} KiB ÷ bare SDK ${kb(sdk.heapPerRun)} KiB = ${fmt(ours.heapPerRun / sdk.heapPerRun, 3)}× (target ≤ 1.2×); engine + adapter add ${kb(ours.heapPerRun - sdk.heapPerRun)} KiB/run`);
  }
  printTable('cancel them all (ms after cancel() / the abort loop started)', [
    ['what', 'runs', 'cancel() ms', 'terminals when it returned', 'all settled ms', 'server: no request in progress ms', 'idle sockets left in the pool', 'heap after GC vs baseline', 'resources left'],
    ...results.map((r) => [
      r.label, String(r.n), fmt(r.cancelCallMs, 1), r.label.startsWith('bare') ? `${r.terminalsAtReturn} (async)` : String(r.terminalsAtReturn), fmt(r.settledMs, 1),
      r.serverIdleMs === undefined ? '-' : fmt(r.serverIdleMs, 1), r.pooledSockets === undefined ? '-' : String(r.pooledSockets),
      `${r.heapAfterVsBaseline >= 0 ? '+' : ''}${fmt(r.heapAfterVsBaseline * 100, 2)} %`, r.left,
    ]),
  ]);
  await server.close();
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
