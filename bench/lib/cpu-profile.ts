/**
 * CPU profiles for the benchmarks, taken in-process with the inspector's sampling profiler (what
 * `node --cpu-prof` writes), summarised as self time per function and per area (rxjs, loopctl,
 * openai, undici/node, GC), so a benchmark can say where a cost goes without a viewer.
 */
import { Session } from 'node:inspector/promises';

interface ProfileNode {
  readonly id: number;
  readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number };
  readonly children?: readonly number[];
}
interface Profile {
  readonly nodes: readonly ProfileNode[];
  readonly samples: readonly number[];
  readonly timeDeltas: readonly number[];
}

/** Self time (µs) by key, and the total sampled time (µs). */
export interface CpuSummary {
  readonly totalUs: number;
  readonly byFunction: ReadonlyMap<string, number>;
  readonly byArea: ReadonlyMap<string, number>;
  /** Self time of loopctl's and RxJS's own functions (what a bare SDK consumer does not run). */
  readonly ownFunctions: ReadonlyMap<string, number>;
}

/** Areas that are loopctl's own cost: its code and the RxJS it composes. */
export const isOwnArea = (area: string): boolean => area.startsWith('loopctl') || area === 'rxjs';

const BASELINE_MARK = process.env['BENCH_BASELINE_DIR'] || '\0';

/** The area a function belongs to, from its script URL. */
export function areaOf(url: string, name: string): string {
  if (url === '') return name.startsWith('(') ? name : '(native)';
  if (url.includes(BASELINE_MARK)) return 'loopctl (baseline build)';
  if (url.includes('/loopctl-bench/') || url.includes('/src/')) return 'loopctl';
  if (url.includes('/node_modules/rxjs/')) return 'rxjs';
  if (url.includes('/node_modules/openai/')) return 'openai SDK';
  if (url.includes('/node_modules/eventsource-parser/')) return 'eventsource-parser';
  if (url.includes('/node_modules/zod/')) return 'zod';
  if (url.includes('/bench/')) return 'benchmark';
  if (url.startsWith('node:internal/deps/undici') || url.startsWith('wasm://')) return 'undici (fetch)'; // llhttp is wasm
  if (url.startsWith('node:')) return 'node';
  if (url.includes('/node_modules/')) return 'other dependency';
  return 'loopctl';
}

/**
 * Runs `work` under the sampling profiler (`intervalUs` between samples) and summarises the samples.
 * With `within`, only samples whose stack holds a function of that name count (a window: wrap the
 * code to measure in a function of a unique name).
 */
export async function profile(work: () => Promise<void>, intervalUs = 100, within?: string): Promise<CpuSummary> {
  return summarise(await record(work, intervalUs), within);
}

/** Like {@link profile} with windows: one summary per window function name, from one profile. */
export async function profileWindows(
  work: () => Promise<void>,
  windows: readonly string[],
  intervalUs = 100,
): Promise<Map<string, CpuSummary>> {
  const p = await record(work, intervalUs);
  return new Map(windows.map((w) => [w, summarise(p, w)] as const));
}

async function record(work: () => Promise<void>, intervalUs: number): Promise<Profile> {
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: intervalUs });
  await session.post('Profiler.start');
  let p: Profile;
  try {
    await work();
  } finally {
    p = ((await session.post('Profiler.stop')) as { profile: Profile }).profile;
    session.disconnect();
  }
  return p;
}

function summarise(p: Profile, within: string | undefined): CpuSummary {
  const byId = new Map(p.nodes.map((n) => [n.id, n] as const));
  // Samples taken while the inspector itself works (starting and stopping the profiler) are not the work's.
  const inspector = new Set<number>();
  const mark = (id: number): void => {
    inspector.add(id);
    for (const child of byId.get(id)?.children ?? []) mark(child);
  };
  for (const n of p.nodes) if (n.callFrame.url.startsWith('node:inspector') && !inspector.has(n.id)) mark(n.id);
  let inWindow: Set<number> | undefined;
  if (within !== undefined) {
    const windowed = (inWindow = new Set<number>());
    const markWindow = (id: number): void => {
      windowed.add(id);
      for (const child of byId.get(id)?.children ?? []) markWindow(child);
    };
    for (const n of p.nodes) if (n.callFrame.functionName === within && !windowed.has(n.id)) markWindow(n.id);
  }
  const byFunction = new Map<string, number>();
  const byArea = new Map<string, number>();
  const ownFunctions = new Map<string, number>();
  let totalUs = 0;
  for (let i = 0; i < p.samples.length; i++) {
    const node = byId.get(p.samples[i]!)!;
    const dt = p.timeDeltas[i] ?? 0;
    const { functionName, url, lineNumber } = node.callFrame;
    if (functionName === '(idle)' || inspector.has(node.id)) continue;
    if (inWindow !== undefined && !inWindow.has(node.id)) continue;
    totalUs += dt;
    const file = url
      .replace(/^.*\/(node_modules\/(?:\.cache\/)?[^/]+\/)/, '$1')
      .replace(/^file:\/\/.*\/(src|bench|dist)\//, '$1/');
    const key = url === '' ? functionName : `${functionName || '(anonymous)'} ${file}:${lineNumber + 1}`;
    byFunction.set(key, (byFunction.get(key) ?? 0) + dt);
    const area = areaOf(url, functionName);
    byArea.set(area, (byArea.get(area) ?? 0) + dt);
    if (isOwnArea(area)) ownFunctions.set(key, (ownFunctions.get(key) ?? 0) + dt);
  }
  return { totalUs, byFunction, byArea, ownFunctions };
}

/** The top `n` entries of a summary map, largest first, as [key, µs, share of total]. */
export function top(map: ReadonlyMap<string, number>, totalUs: number, n: number): [string, number, number][] {
  return [...map]
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(([k, us]) => [k, us, us / totalUs]);
}

/** `a` minus `b`, key by key (µs; a key missing on one side counts 0 there). */
export function difference(a: ReadonlyMap<string, number>, b: ReadonlyMap<string, number>): Map<string, number> {
  const out = new Map<string, number>();
  for (const k of new Set([...a.keys(), ...b.keys()])) out.set(k, (a.get(k) ?? 0) - (b.get(k) ?? 0));
  return out;
}
