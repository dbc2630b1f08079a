/**
 * Where the remaining cost goes (issue 17: a missed target is accepted only with a heap or CPU
 * profile that attributes it). Sections (BENCH_ONLY=<name> runs one):
 *  - `gate-heap`: the live heap of runs idle on a tool gate, by the loopctl function that allocated it
 *    (V8's sampling heap profiler: bench/lib/heap-profile.ts);
 *  - `gate-snapshot`: the same runs' objects by V8 type and constructor (heap snapshots before and
 *    after, diffed: bench/lib/heap-snapshot.ts), with the count per run;
 *  - `stream-heap`: the same for runs on a stalled stream, beside the bare SDK's streams;
 *  - `stream-cpu`: CPU per chunk of `run()` and of the bare SDK (server modes paced and stream), by function
 *    (the sampling CPU profiler: bench/lib/cpu-profile.ts), and their difference;
 *  - `cancel-cpu`: CPU of cancelling 1 000 runs on stalled streams (one `cancel()`) and of the SDK's
 *    own abort loop over 1 000 streams, by function, and their difference;
 *  - `cancel-http-cpu`: the synchronous cancel of one run mid-stream over HTTP (the HTTP rows of
 *    the cancel benchmark) against the bare SDK's `controller.abort()`, by function.
 * BENCH_RUNS: runs per batch (default 1000; cancel-http-cpu: 300). Nothing is asserted.
 */
import OpenAI from 'openai';
import { Subject, take } from 'rxjs';
import { setImmediate as tick } from 'node:timers/promises';
import type { Agent } from '../src/index.js';
import { privateFetch, startChildServer, type ChildServer } from './lib/child-server.js';
import { difference, profile, profileWindows, top, type CpuSummary } from './lib/cpu-profile.js';
import { sampleLiveHeap, type HeapSummary } from './lib/heap-profile.js';
import { diffSnapshots, writeSnapshot } from './lib/heap-snapshot.js';
import { LIB_LABEL, lib } from './lib/loopctl.js';
import { instantToolModel } from './lib/models.js';
import { fmt, fullGc, printTable, sleep } from './lib/stats.js';

const { CancelSignal, defineAgent, run, tool, openaiChat } = lib;
const RUNS = Number(process.env['BENCH_RUNS'] ?? 1000);
const TOP = 25;

/** A table of the largest entries of `map` (per unit of `per`), with each one's share and the running share. */
function table(
  title: string,
  map: ReadonlyMap<string, number>,
  total: number,
  per: number,
  unit: string,
  n = TOP,
): void {
  let cum = 0;
  const rows = top(map, total, n).map(([k, v, f]) => {
    cum += f;
    return [
      k.replace(/node_modules\/\.cache\/loopctl-bench\//, ''),
      fmt(v / per, 1),
      `${fmt(f * 100, 1)} %`,
      `${fmt(cum * 100, 0)} %`,
    ];
  });
  printTable(title, [['where', unit, 'share', 'cumulative'], ...rows]);
}

const kinds = (h: HeapSummary, n: number, label: string) =>
  table(
    `${label}: live heap by area (${fmt(h.totalBytes / n, 0)} B per run sampled)`,
    h.byArea,
    h.totalBytes,
    n,
    'B/run',
    10,
  );

/** `n` runs of `agent` on one CancelSignal, resolved once each has seen `idleOn`; returns the signal. */
async function idleRuns(agent: Agent, n: number, idleOn: string): Promise<InstanceType<typeof CancelSignal>> {
  const cancel = new CancelSignal();
  let idle = 0;
  for (let i = 0; i < n; i++) {
    run(agent, 'go', { cancel }).subscribe({ next: (e) => void (e.type === idleOn && idle++) });
    if ((i + 1) % 500 === 0) while (idle < i + 1) await sleep(1);
  }
  while (idle < n) await sleep(1);
  return cancel;
}

/** `n` bare SDK streams waiting for their next chunk; returns their AbortControllers. */
async function sdkStreams(client: OpenAI, n: number): Promise<AbortController[]> {
  const controllers: AbortController[] = [];
  let idle = 0;
  for (let i = 0; i < n; i++) {
    const controller = new AbortController();
    controllers.push(controller);
    void (async () => {
      try {
        const body = {
          model: 'hold:1',
          messages: [{ role: 'user' as const, content: 'go' }],
          stream: true as const,
          stream_options: { include_usage: true },
        };
        const stream = await client.chat.completions.create(body, {
          signal: controller.signal,
          maxRetries: 0,
          timeout: 600_000,
        });
        let _text = ''; // the answer, built as an app would (the work counts; the text is not read)
        for await (const chunk of stream) {
          const delta = chunk.choices[0]?.delta?.content;
          if (delta) {
            _text += delta;
            idle++;
          }
        }
      } catch {
        /* aborted */
      }
    })();
    if ((i + 1) % 500 === 0) while (idle < i + 1) await sleep(1);
  }
  while (idle < n) await sleep(1);
  return controllers;
}

async function transportFor(server: ChildServer) {
  const transport = await privateFetch();
  const client = new OpenAI({ baseURL: server.baseURL, apiKey: 'k', maxRetries: 0, fetch: transport.fetch });
  const agent = defineAgent({ name: 'bench', instructions: '', model: openaiChat({ model: 'hold:1', client }) });
  return { client, agent, dispose: transport.destroy };
}

async function gateHeap(): Promise<void> {
  const gate$ = new Subject<string>();
  const wait = tool({
    name: 'wait',
    description: 'waits',
    parameters: { type: 'object', properties: {} },
    execute: () => gate$.pipe(take(1)),
  });
  const agent = defineAgent({ name: 'bench', instructions: '', model: instantToolModel(2, 'wait'), tools: [wait] });
  (await idleRuns(agent, 300, 'tool_call_started')).cancel('warm-up');
  let cancel: InstanceType<typeof CancelSignal> | undefined;
  const h = await sampleLiveHeap(async () => void (cancel = await idleRuns(agent, RUNS, 'tool_call_started')), 64);
  cancel!.cancel('done');
  kinds(h, RUNS, `gate-heap: ${RUNS} runs idle on a tool gate`);
  table(
    'gate-heap: live heap by the innermost loopctl function on the allocating stack',
    h.byLoopctlFrame,
    h.totalBytes,
    RUNS,
    'B/run',
    35,
  );
  table('gate-heap: … and by the function that allocated it', h.byPair, h.totalBytes, RUNS, 'B/run', 40);
}

async function gateSnapshot(): Promise<void> {
  const gate$ = new Subject<string>();
  const wait = tool({
    name: 'wait',
    description: 'waits',
    parameters: { type: 'object', properties: {} },
    execute: () => gate$.pipe(take(1)),
  });
  const agent = defineAgent({ name: 'bench', instructions: '', model: instantToolModel(2, 'wait'), tools: [wait] });
  (await idleRuns(agent, 300, 'tool_call_started')).cancel('warm-up');
  await fullGc();
  const before = writeSnapshot();
  const cancel = await idleRuns(agent, RUNS, 'tool_call_started');
  await fullGc();
  const after = writeSnapshot();
  cancel.cancel('done');
  const groups = diffSnapshots(before, after);
  const total = groups.reduce((t, g) => t + g.bytes, 0);
  let cum = 0;
  printTable(
    `gate-snapshot: ${RUNS} runs idle on a tool gate, new objects by V8 type:name (${fmt(total / RUNS, 0)} B per run)`,
    [
      ['type:name', 'per run', 'B/run', 'share', 'cumulative'],
      ...groups.slice(0, 30).map((g) => {
        cum += g.bytes / total;
        return [
          g.key,
          fmt(g.count / RUNS, 2),
          fmt(g.bytes / RUNS, 1),
          `${fmt((g.bytes / total) * 100, 1)} %`,
          `${fmt(cum * 100, 0)} %`,
        ];
      }),
    ],
  );
}

async function streamHeap(server: ChildServer): Promise<void> {
  const sdk = await transportFor(server);
  for (const c of await sdkStreams(sdk.client, 300)) c.abort();
  let controllers: AbortController[] = [];
  const hs = await sampleLiveHeap(async () => void (controllers = await sdkStreams(sdk.client, RUNS)), 64);
  for (const c of controllers) c.abort();
  await sleep(200);
  await sdk.dispose();
  const ours = await transportFor(server);
  (await idleRuns(ours.agent, 300, 'text_delta')).cancel('warm-up');
  let cancel: InstanceType<typeof CancelSignal> | undefined;
  const hr = await sampleLiveHeap(async () => void (cancel = await idleRuns(ours.agent, RUNS, 'text_delta')), 64);
  cancel!.cancel('done');
  await sleep(200);
  await ours.dispose();
  kinds(hs, RUNS, `stream-heap: ${RUNS} bare SDK streams`);
  kinds(hr, RUNS, `stream-heap: ${RUNS} runs on stalled streams`);
  const extra = hr.totalBytes - hs.totalBytes;
  table(
    `stream-heap: run() minus the SDK by area (${fmt(extra / RUNS, 0)} B per run)`,
    difference(hr.byArea, hs.byArea),
    extra,
    RUNS,
    'B/run',
    10,
  );
  const own = [...hr.ownByLoopctlFrame.values()].reduce((t, v) => t + v, 0);
  table(
    `stream-heap: run(), what loopctl and RxJS allocated (${fmt(own / RUNS, 0)} B per run), ` +
      'by the innermost loopctl function',
    hr.ownByLoopctlFrame,
    own,
    RUNS,
    'B/run',
    35,
  );
  table(
    'stream-heap: run() by the innermost loopctl function on the allocating stack',
    hr.byLoopctlFrame,
    hr.totalBytes,
    RUNS,
    'B/run',
    20,
  );
  table(
    'stream-heap: run() minus the SDK, by the function that allocated it',
    difference(hr.byFrame, hs.byFrame),
    extra,
    RUNS,
    'B/run',
    35,
  );
}

/** Sums CPU summaries (µs) key by key. */
function sum(list: readonly CpuSummary[]): CpuSummary {
  const add = (key: 'byFunction' | 'byArea' | 'ownFunctions') => {
    const out = new Map<string, number>();
    for (const s of list) for (const [k, v] of s[key]) out.set(k, (out.get(k) ?? 0) + v);
    return out;
  };
  const totalUs = list.reduce((t, s) => t + s.totalUs, 0);
  return { totalUs, byFunction: add('byFunction'), byArea: add('byArea'), ownFunctions: add('ownFunctions') };
}

function compare(label: string, ours: CpuSummary, theirs: CpuSummary, per: number, unit: string): void {
  table(`${label}: run() by area (${fmt(ours.totalUs / per, 2)} ${unit})`, ours.byArea, ours.totalUs, per, unit, 10);
  table(
    `${label}: bare SDK by area (${fmt(theirs.totalUs / per, 2)} ${unit})`,
    theirs.byArea,
    theirs.totalUs,
    per,
    unit,
    10,
  );
  const extra = ours.totalUs - theirs.totalUs;
  table(
    `${label}: run() minus the SDK by area (${fmt(extra / per, 2)} ${unit})`,
    difference(ours.byArea, theirs.byArea),
    extra,
    per,
    unit,
    10,
  );
  table(
    `${label}: run() minus the SDK by function`,
    difference(ours.byFunction, theirs.byFunction),
    extra,
    per,
    unit,
    30,
  );
  const own = [...ours.ownFunctions.values()].reduce((t, v) => t + v, 0);
  table(
    `${label}: run(), loopctl's and RxJS's own functions (${fmt(own / per, 2)} ${unit})`,
    ours.ownFunctions,
    own,
    per,
    unit,
    30,
  );
}

async function streamCpu(server: ChildServer): Promise<void> {
  const CHUNKS = 10_000;
  const client = new OpenAI({ baseURL: server.baseURL, apiKey: 'k', maxRetries: 0 });
  for (const mode of ['paced', 'stream']) {
    const model = `${mode}:${CHUNKS}`;
    const agent = defineAgent({ name: 'bench', instructions: '', model: openaiChat({ model, client }) });
    const sdk = async () => {
      const body = {
        model,
        messages: [{ role: 'user' as const, content: 'hi' }],
        stream: true as const,
        stream_options: { include_usage: true },
      };
      const stream = await client.chat.completions.create(body, { maxRetries: 0, timeout: 600_000 });
      let _text = ''; // the answer, built as an app would (the work counts; the text is not read)
      for await (const chunk of stream) _text += chunk.choices[0]?.delta?.content ?? '';
    };
    const ours = () => new Promise<void>((resolve) => run(agent, 'hi').subscribe({ complete: resolve }));
    const a: CpuSummary[] = [];
    const b: CpuSummary[] = [];
    for (let i = 0; i < 10; i++) {
      const r = await profile(ours);
      const s = await profile(sdk);
      if (i >= 2) {
        a.push(r);
        b.push(s);
      }
    }
    compare(
      `stream-cpu, server mode "${mode}": ${a.length} requests of ${CHUNKS} chunks each, alternated`,
      sum(a),
      sum(b),
      a.length * CHUNKS,
      'µs/chunk',
    );
  }
}

async function cancelCpu(server: ChildServer): Promise<void> {
  const a: CpuSummary[] = [];
  const b: CpuSummary[] = [];
  for (let i = 0; i < 4; i++) {
    const sdk = await transportFor(server);
    const controllers = await sdkStreams(sdk.client, RUNS);
    b.push(
      await profile(async () => {
        for (const c of controllers) c.abort();
      }, 20),
    );
    await sleep(200);
    await sdk.dispose();
    const ours = await transportFor(server);
    const cancel = await idleRuns(ours.agent, RUNS, 'text_delta');
    a.push(await profile(async () => cancel.cancel('bench'), 20));
    await sleep(200);
    await ours.dispose();
  }
  compare(
    `cancel-cpu: ${a.length - 1} × ${RUNS} stalled streams (first pair dropped)`,
    sum(a.slice(1)),
    sum(b.slice(1)),
    (a.length - 1) * RUNS,
    'µs/run',
  );
}

// The windows of cancel-http-cpu: only samples under these count.
function runCancelWindow(f: () => void): void {
  f();
}
function sdkAbortWindow(f: () => void): void {
  f();
}

async function cancelHttpCpu(server: ChildServer): Promise<void> {
  const n = Number(process.env['BENCH_RUNS'] ?? 300);
  const client = new OpenAI({ baseURL: server.baseURL, apiKey: 'k', maxRetries: 0 });
  const agent = defineAgent({ name: 'bench', instructions: '', model: openaiChat({ model: 'hold:2', client }) });
  const ours = async () => {
    const cancel = new CancelSignal();
    let reach!: () => void;
    const reached = new Promise<void>((resolve) => (reach = resolve));
    let seen = 0;
    run(agent, 'go', { cancel }).subscribe({ next: (e) => void (e.type === 'text_delta' && ++seen === 2 && reach()) });
    await reached;
    await tick();
    runCancelWindow(() => cancel.cancel('bench'));
  };
  const sdk = async () => {
    const controller = new AbortController();
    let reach!: () => void;
    const reached = new Promise<void>((resolve) => (reach = resolve));
    const loop = (async () => {
      try {
        const body = { model: 'hold:2', messages: [{ role: 'user' as const, content: 'go' }], stream: true as const };
        const s = await client.chat.completions.create(body, {
          signal: controller.signal,
          maxRetries: 0,
          timeout: 600_000,
        });
        for await (const chunk of s) if (chunk.choices[0]?.delta?.content) reach();
      } catch {
        /* the abort */
      }
    })();
    await reached;
    await tick();
    sdkAbortWindow(() => controller.abort());
    await loop;
  };
  for (let i = 0; i < 50; i++) {
    await ours();
    await sdk();
  }
  const windows = ['runCancelWindow', 'sdkAbortWindow'];
  const p = await profileWindows(
    async () => {
      for (let i = 0; i < n; i++) {
        await ours();
        await sdk();
      }
    },
    windows,
    20,
  );
  compare(
    `cancel-http-cpu: ${n} cancels mid-stream over HTTP, alternated (synchronous part only)`,
    p.get(windows[0]!)!,
    p.get(windows[1]!)!,
    n,
    'µs/cancel',
  );
}

export async function main(): Promise<void> {
  const only = process.env['BENCH_ONLY'];
  const server = await startChildServer();
  console.log(`profiles — ${LIB_LABEL}`);
  const sections: [string, () => Promise<void>][] = [
    ['gate-heap', gateHeap],
    ['gate-snapshot', gateSnapshot],
    ['stream-heap', () => streamHeap(server)],
    ['stream-cpu', () => streamCpu(server)],
    ['cancel-cpu', () => cancelCpu(server)],
    ['cancel-http-cpu', () => cancelHttpCpu(server)],
  ];
  for (const [name, section] of sections) if (!only || name === only) await section();
  await server.close();
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
