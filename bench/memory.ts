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
 *
 * Rounds: one warm-up round, then BENCH_ROUNDS (default 7) rounds; each round measures every
 * subject once per size (BENCH_SIZES, default 1000), in an order rotated each round. The ratios
 * (heap per stalled-stream run ÷ the bare SDK's, cancel() ÷ the SDK's abort loop) are taken
 * round by round; the tables show the median of the rounds and their min–max. With
 * BENCH_BASELINE_DIR, the baseline build's runs are measured in the same rounds.
 */
import OpenAI from 'openai';
import { Subject, take } from 'rxjs';
import type { Agent } from '../src/index.js';
import { epochNow, privateFetch, socketFds, startChildServer, type ChildServer } from './lib/child-server.js';
import { builds, LIB_LABEL, type Build } from './lib/loopctl.js';
import { instantToolModel } from './lib/models.js';
import {
  fmt,
  fullGc,
  loadAverage,
  median,
  medianRange,
  printTable,
  resourceCounts,
  resourceDelta,
  sleep,
} from './lib/stats.js';

const BATCH = 500;
/** The targets (issue 17; the tool gate's as issue 33 restates it: ≤ 10 KiB, with the profile of what remains). */
const TARGET = { streamRatio: 1.15, gateKiB: 10, cancelRatio: 1.1 };

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

async function measure(
  label: string,
  n: number,
  server: ChildServer | undefined,
  make: () => Promise<Subject_>,
): Promise<Measured> {
  const subject = await make();
  await fullGc();
  const baseResources = resourceCounts();
  const baseFds = socketFds();
  const base = mem();
  let idle = 0;
  let ended = 0;
  for (let i = 0; i < n; i += BATCH) {
    const upto = Math.min(n, i + BATCH);
    for (let j = i; j < upto; j++)
      subject.start(
        j,
        () => idle++,
        () => ended++,
      );
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
              {
                model: 'hold:1',
                messages: [{ role: 'user', content: 'go' }],
                stream: true,
                stream_options: { include_usage: true },
              },
              { signal: controller.signal, maxRetries: 0, timeout: 600_000 },
            );
            let _text = ''; // the answer, built as an app would (the work counts; the text is not read)
            for await (const chunk of stream) {
              const delta = chunk.choices[0]?.delta?.content;
              if (delta) {
                _text += delta;
                idle();
              }
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

/** N runs of `agent` on `build`, all on one shared CancelSignal; a run is idle at its `idleOn` event. */
const runs = (
  build: Build,
  label: string,
  n: number,
  server: ChildServer | undefined,
  agentOf: (build: Build) => Promise<{ agent: Agent; dispose?: () => Promise<void> }>,
  idleOn: string,
) =>
  measure(label, n, server, async () => {
    const { CancelSignal, run } = build.lib;
    const { agent, dispose } = await agentOf(build);
    let cancel = new CancelSignal();
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

interface Subject__ {
  readonly label: string;
  readonly build: string;
  readonly kind: 'sdk' | 'stream' | 'gate';
  readonly measure: (n: number) => Promise<Measured>;
}

export async function main(): Promise<void> {
  const server = await startChildServer();
  const streamAgent = async (build: Build) => {
    const transport = await privateFetch();
    const client = new OpenAI({ baseURL: server.baseURL, apiKey: 'k', maxRetries: 0, fetch: transport.fetch });
    const model = build.lib.openaiChat({ model: 'hold:1', client });
    return { agent: build.lib.defineAgent({ name: 'bench', instructions: '', model }), dispose: transport.destroy };
  };
  const gate$ = new Subject<string>();
  const gateAgent = async (build: Build) => {
    const { defineAgent, tool } = build.lib;
    const wait = tool({
      name: 'wait',
      description: 'waits for the gate',
      parameters: { type: 'object', properties: {} },
      execute: () => gate$.pipe(take(1)),
    });
    return {
      agent: defineAgent({ name: 'bench', instructions: '', model: instantToolModel(2, 'wait'), tools: [wait] }),
    };
  };
  const suffix = (b: Build) => (b === builds[0] ? '' : ` [${b.name}]`);
  const subjects: Subject__[] = [
    { label: 'bare SDK, stalled stream', build: 'openai SDK', kind: 'sdk', measure: (n) => sdkStreams(server, n) },
    ...builds.flatMap((b): Subject__[] => [
      {
        label: `run() + openaiChat, stalled stream${suffix(b)}`,
        build: b.name,
        kind: 'stream',
        measure: (n) => runs(b, `run() + openaiChat, stalled stream${suffix(b)}`, n, server, streamAgent, 'text_delta'),
      },
      {
        label: `run(), idle on a tool gate (no socket)${suffix(b)}`,
        build: b.name,
        kind: 'gate',
        measure: (n) =>
          runs(b, `run(), idle on a tool gate (no socket)${suffix(b)}`, n, undefined, gateAgent, 'tool_call_started'),
      },
    ]),
  ];

  // warm-up round: code paths compiled before any baseline
  for (const s of subjects) await s.measure(300);

  const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 7);
  const sizes = (process.env['BENCH_SIZES'] ?? '1000').split(',').map(Number);
  const results = new Map<string, Measured[]>();
  const ratios = new Map<string, { heap: number[]; cancel: number[] }>();
  const loads: string[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    loads.push(await loadAverage());
    for (const n of sizes) {
      const perRound = new Map<Subject__, Measured>();
      for (let k = 0; k < subjects.length; k++) {
        const s = subjects[(k + round) % subjects.length]!;
        const m = await s.measure(n);
        perRound.set(s, m);
        const key = `${s.label}\0${n}`;
        results.set(key, [...(results.get(key) ?? []), m]);
      }
      const sdk = perRound.get(subjects[0]!)!;
      for (const [s, m] of perRound) {
        if (s.kind !== 'stream') continue;
        const key = `${s.build}\0${n}`;
        const r = ratios.get(key) ?? { heap: [], cancel: [] };
        r.heap.push(m.heapPerRun / sdk.heapPerRun);
        r.cancel.push(m.cancelCallMs / sdk.cancelCallMs);
        ratios.set(key, r);
      }
    }
    console.log(`round ${round + 1}/${ROUNDS} done (load average ${loads.at(-1)})`);
  }

  const kb = (bytes: number) => bytes / 1024;
  const all = [...results.values()];
  printTable(
    `memory per concurrent idle run (heapUsed after a full GC; KiB = 1 024 B), ` +
      `median of ${ROUNDS} rounds (min–max) — ${LIB_LABEL}; ` +
      `load average per round: ${loads.join(' | ')}`,
    [
      ['what', 'runs', 'heap KiB/run', 'external KiB/run', 'rss KiB/run'],
      ...all.map((ms) => [
        ms[0]!.label,
        String(ms[0]!.n),
        medianRange(
          ms.map((m) => kb(m.heapPerRun)),
          2,
        ),
        medianRange(
          ms.map((m) => kb(m.externalPerRun)),
          2,
        ),
        medianRange(
          ms.map((m) => kb(m.rssPerRun)),
          2,
        ),
      ]),
    ],
  );
  printTable(`cancel them all (ms after cancel() / the abort loop started), median of ${ROUNDS} rounds (min–max)`, [
    [
      'what',
      'runs',
      'cancel() ms',
      'terminals when it returned (fewest)',
      'all settled ms',
      'server: no request in progress ms',
      'idle sockets left in the pool (most)',
      'heap after GC vs baseline (worst)',
      'resources left',
    ],
    ...all.map((ms) => {
      const r = ms[0]!;
      const worst = ms.map((m) => m.heapAfterVsBaseline).reduce((x, y) => (Math.abs(y) > Math.abs(x) ? y : x));
      const terminals = Math.min(...ms.map((m) => m.terminalsAtReturn));
      const idle = ms.map((m) => m.serverIdleMs).filter((x): x is number => x !== undefined);
      const pooled = ms.map((m) => m.pooledSockets).filter((x): x is number => x !== undefined);
      return [
        r.label,
        String(r.n),
        medianRange(
          ms.map((m) => m.cancelCallMs),
          1,
        ),
        r.label.startsWith('bare') ? `${terminals} (async)` : String(terminals),
        medianRange(
          ms.map((m) => m.settledMs),
          1,
        ),
        idle.length ? medianRange(idle, 1) : '-',
        pooled.length ? String(Math.max(...pooled)) : '-',
        `${worst >= 0 ? '+' : ''}${fmt(worst * 100, 2)} %`,
        [...new Set(ms.map((m) => m.left))].join('; '),
      ];
    }),
  ]);
  const verdict: string[][] = [['target', 'build', 'runs', 'measured: median of rounds (min–max)', 'target', 'met']];
  for (const n of sizes) {
    for (const b of builds) {
      const r = ratios.get(`${b.name}\0${n}`)!;
      const gate = results
        .get(`run(), idle on a tool gate (no socket)${suffix(b)}\0${n}`)!
        .map((m) => kb(m.heapPerRun));
      const stream = results.get(`run() + openaiChat, stalled stream${suffix(b)}\0${n}`)!;
      const allDelivered = stream.every((m) => m.terminalsAtReturn === n);
      verdict.push([
        'heap per stalled-stream run ÷ bare SDK',
        b.name,
        String(n),
        `${medianRange(r.heap, 3)}×`,
        `≤ ${TARGET.streamRatio}×`,
        median(r.heap) <= TARGET.streamRatio ? 'yes' : 'NO',
      ]);
      verdict.push([
        'heap per run idle on a tool gate',
        b.name,
        String(n),
        `${medianRange(gate, 2)} KiB`,
        `≤ ${TARGET.gateKiB} KiB`,
        median(gate) <= TARGET.gateKiB ? 'yes' : 'NO',
      ]);
      verdict.push([
        "cancel() of all stalled-stream runs ÷ the SDK's abort loop",
        b.name,
        String(n),
        `${medianRange(r.cancel, 3)}×`,
        `≤ ${TARGET.cancelRatio}×, all terminals delivered`,
        median(r.cancel) <= TARGET.cancelRatio && allDelivered
          ? 'yes'
          : `NO${allDelivered ? '' : ' (terminals missing)'}`,
      ]);
    }
  }
  printTable('verdict (ratios taken round by round, against the bare SDK measured in the same round)', verdict);
  await server.close();
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
