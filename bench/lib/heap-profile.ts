/**
 * Where the live heap of a batch of runs was allocated: V8's sampling heap profiler (what
 * `node --heap-prof` writes), read through the inspector. Sampling starts just before the batch,
 * and the profile is read after a full GC, so it holds only objects still alive, each sample with
 * the JavaScript stack that allocated it. Each sample is attributed to the innermost frame in
 * loopctl's own code (which function of the engine or adapter made it, even when an RxJS operator
 * or the SDK allocated the object), and to the innermost frame of all (what allocated it).
 */
import { Session } from 'node:inspector/promises';
import { areaOf, isOwnArea } from './cpu-profile.js';

interface SamplingNode {
  readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number };
  readonly selfSize: number;
  readonly children: readonly SamplingNode[];
}

/** Live bytes of a batch by allocating function. */
export interface HeapSummary {
  /** Sum of the sampled live bytes (an estimate of the batch's live heap). */
  readonly totalBytes: number;
  /** By the innermost loopctl frame (`fn file:line`), or `(not loopctl) …` with the innermost frame's area. */
  readonly byLoopctlFrame: ReadonlyMap<string, number>;
  /** By the innermost frame of all (`fn file:line`). */
  readonly byFrame: ReadonlyMap<string, number>;
  /** By area of the innermost frame (rxjs, loopctl, openai SDK, undici, node, …). */
  readonly byArea: ReadonlyMap<string, number>;
  /** By the innermost loopctl frame and the innermost frame of all (`loopctl frame ← allocating frame`). */
  readonly byPair: ReadonlyMap<string, number>;
  /** Only what loopctl's own code or RxJS allocated, by the innermost loopctl frame. */
  readonly ownByLoopctlFrame: ReadonlyMap<string, number>;
}

const frameKey = (f: SamplingNode['callFrame']): string => {
  const file = f.url
    .replace(/^.*\/(node_modules\/(?:\.cache\/)?[^/]+\/)/, '$1')
    .replace(/^file:\/\/.*\/(src|bench|dist)\//, '$1/');
  return f.url === '' ? f.functionName || '(root)' : `${f.functionName || '(anonymous)'} ${file}:${f.lineNumber + 1}`;
};
const isLoopctl = (f: SamplingNode['callFrame']): boolean => areaOf(f.url, f.functionName).startsWith('loopctl');

/**
 * Runs `work` (it should leave its objects alive, e.g. runs idle at a wait) while V8 samples
 * allocations about every `intervalBytes`, then collects garbage and summarises what is still alive.
 */
export async function sampleLiveHeap(work: () => Promise<void>, intervalBytes = 256): Promise<HeapSummary> {
  const session = new Session();
  session.connect();
  try {
    await session.post('HeapProfiler.enable');
    await session.post('HeapProfiler.collectGarbage');
    await session.post('HeapProfiler.startSampling', { samplingInterval: intervalBytes });
    await work();
    for (let i = 0; i < 3; i++) await session.post('HeapProfiler.collectGarbage');
    const { profile } = (await session.post('HeapProfiler.getSamplingProfile')) as { profile: { head: SamplingNode } };
    await session.post('HeapProfiler.stopSampling');
    return summarise(profile.head);
  } finally {
    session.disconnect();
  }
}

function summarise(head: SamplingNode): HeapSummary {
  const byLoopctlFrame = new Map<string, number>();
  const byFrame = new Map<string, number>();
  const byArea = new Map<string, number>();
  const byPair = new Map<string, number>();
  const ownByLoopctlFrame = new Map<string, number>();
  let totalBytes = 0;
  const add = (map: Map<string, number>, key: string, bytes: number) => map.set(key, (map.get(key) ?? 0) + bytes);
  const walk = (node: SamplingNode, ours: string | undefined): void => {
    const here = isLoopctl(node.callFrame) ? frameKey(node.callFrame) : ours;
    if (node.selfSize > 0) {
      totalBytes += node.selfSize;
      const area = areaOf(node.callFrame.url, node.callFrame.functionName);
      add(byFrame, frameKey(node.callFrame), node.selfSize);
      add(byArea, area, node.selfSize);
      add(byLoopctlFrame, here ?? `(not loopctl) ${area}`, node.selfSize);
      add(byPair, `${here ?? '(not loopctl)'} ← ${frameKey(node.callFrame)}`, node.selfSize);
      if (isOwnArea(area))
        add(ownByLoopctlFrame, here ?? '(no loopctl frame: RxJS scheduler or microtask)', node.selfSize);
    }
    for (const child of node.children) walk(child, here);
  };
  walk(head, undefined);
  return { totalBytes, byLoopctlFrame, byFrame, byArea, byPair, ownByLoopctlFrame };
}
