/**
 * `npm run bench` runs every benchmark; `npm run bench -- <name> [<name>…]`
 * runs some. Each benchmark runs in its own Node process
 * (`node --expose-gc --import tsx bench/<name>.ts`), so they cannot disturb
 * each other's heap or JIT state, and prints its own tables. The library is
 * compiled first (bench/lib/loopctl.ts: the benchmarks measure tsc's output,
 * as users run it). Never part of `npm test`. Figures and their meaning:
 * BENCHMARKS.md.
 *
 * Environment knobs: BENCH_RUNS (cancel: runs per checkpoint per round, default 1000; profile:
 * runs per batch; gemini: cancelled runs per variant, default 300), BENCH_ONLY (cancel: only
 * checkpoints whose name contains it; profile: one section), BENCH_ROUNDS (cancel, stream, memory,
 * gemini: rounds, default 7; turn: default 15),
 * BENCH_REPEATS (stream, gemini: requests per variant per round, default 3), BENCH_CHUNKS (stream,
 * gemini: default 10000), BENCH_SIZES (memory: runs per batch, default "1000"), BENCH_CLIENTS /
 * BENCH_DELTAS (http: default 1000 / 40; BENCH_ROUNDS there defaults to 3; BENCH_CLICKS: click-to-close
 * rounds, default 30, 0 to leave them out; BENCH_FANOUT_CLIENTS / BENCH_FANOUT_RUNS / BENCH_FANOUT_DELTAS: the
 * fan-out scenario's readers, runs and deltas per run, default 1000 / 1 / 30, 0 readers to leave it out), BENCH_COMMITS
 * (sessions: runs committed, default 500), BENCH_LIB=src (measure src/ through tsx instead),
 * BENCH_LIB_DIR=<dir> (measure another compiled build), BENCH_BASELINE_DIR=<dir> (load a second
 * build, e.g. the pre-reshape engine, and measure it in the same rounds: BENCHMARKS.md), BENCH_QUEUE_RUNS
 * (queue: throughput runs, default 200; BENCH_RUNS there: cancelled runs, default 1000), REDIS_URL (queue),
 * BENCH_CANCELS (providers: cancels per round, default 200; BENCH_ROUNDS, BENCH_REPEATS, BENCH_CHUNKS as for stream).
 *
 * `npm run bench -- compare <ref>` builds another commit (bench/lib/compare.ts: a temporary git worktree with this
 * checkout's node_modules linked in) and runs `stream`, `memory` and `cancel` with it loaded as the baseline, in
 * the same processes and rounds as this checkout's build: a regression shows as a ratio above its noise.
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { COMPARED, buildOther, type OtherBuild } from './lib/compare.js';
import { buildLibrary } from './lib/loopctl.js';
import { machine } from './lib/stats.js';

const BENCHES: Record<string, string> = {
  cancel: 'cancel → terminal event latency at every checkpoint',
  stream: 'streaming CPU per chunk: run() vs adapter vs bare openai SDK',
  gemini: 'loopctl/gemini vs the bare @google/genai SDK: CPU per streamed chunk, cancel → terminal',
  turn: 'turn overhead with an instant model and instant tools',
  memory: 'heap per idle run (stalled streams, tool gate); cancel them all',
  http:
    'loopctl/http: 1 000 concurrent SSE clients, CPU per event and heap per connection vs a bare node:http SSE ' +
    'writer; one run fanned out to 1 000 readers at 10 deltas/s (CPU per event, p50/p99 lag behind schedule); ' +
    "the web app's click-to-close latency in Chromium",
  sessions: 'durable sessions: commit latency per run, load of a 10 000-item history (SQLite, Postgres)',
  otel: 'loopctl/otel: CPU per streamed chunk and per run, no SDK vs an SDK with a batching exporter',
  profile: 'where the remaining cost goes: sampled live heap and CPU profiles of the missed targets',
  providers: 'the native adapters (Anthropic) vs their bare SDKs: CPU per streamed chunk, cancel → terminal',
  queue:
    'loopctl/bullmq across processes: cancel and steering latency, throughput with 1 and 2 worker processes, ' +
    'Redis memory per finished run',
};

const here = path.dirname(fileURLToPath(import.meta.url));
let asked = process.argv.slice(2);
/** `compare <ref>`: the other commit, built and loaded as the baseline of {@link COMPARED}. */
let other: OtherBuild | undefined;
if (asked[0] === 'compare') {
  const ref = asked[1];
  if (ref === undefined || asked.length > 2) {
    console.error('usage: npm run bench -- compare <ref> (a commit, branch or tag to measure this checkout against)');
    process.exit(2);
  }
  asked = [...COMPARED];
}
const unknown = asked.filter((n) => !(n in BENCHES));
if (unknown.length > 0) {
  console.error(
    `unknown benchmark(s): ${unknown.join(', ')}; known: ${Object.keys(BENCHES).join(', ')}, compare <ref>`,
  );
  process.exit(2);
}
const names = asked.length > 0 ? asked : Object.keys(BENCHES);

console.log(`machine: ${await machine()}`);
if (process.env['BENCH_LIB'] !== 'src') {
  const t = performance.now();
  buildLibrary();
  console.log(`library compiled with tsc in ${((performance.now() - t) / 1000).toFixed(1)} s`);
}
const env: NodeJS.ProcessEnv = { ...process.env };
if (process.argv[2] === 'compare') {
  const t = performance.now();
  other = buildOther(process.argv[3]!);
  console.log(
    `${process.argv[3]} (${other.name}) compiled with tsc in ${((performance.now() - t) / 1000).toFixed(1)} s`,
  );
  env['BENCH_BASELINE_DIR'] = other.dir;
  env['BENCH_BASELINE_NAME'] = other.name;
}
let failed = 0;
try {
  for (const name of names) {
    console.log(`\n=== ${name}: ${BENCHES[name]} ===`);
    const t = performance.now();
    const r = spawnSync(
      process.execPath,
      ['--expose-gc', '--import', import.meta.resolve('tsx'), path.join(here, `${name}.ts`)],
      { stdio: 'inherit', env },
    );
    console.log(`(${name}: ${((performance.now() - t) / 1000).toFixed(1)} s, exit ${r.status ?? r.signal})`);
    if (r.status !== 0) failed++;
  }
} finally {
  other?.remove();
}
process.exit(failed > 0 ? 1 : 0);
