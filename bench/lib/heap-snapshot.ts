/**
 * Heap-snapshot diffs for the memory benchmarks: which objects a batch of idle runs keeps alive,
 * named by V8 node type and constructor or function name, each with what holds it. `writeSnapshot()`
 * writes a snapshot (V8 runs a full GC first) and keeps nothing in the heap; `diffSnapshots(before,
 * after)` reads both files afterwards and groups the nodes of `after` whose id is not in `before`.
 */
import { readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { writeHeapSnapshot } from 'node:v8';

/** A group of new objects: its key, how many there are and their self size in bytes. */
export interface Group {
  readonly key: string;
  readonly count: number;
  readonly bytes: number;
}

interface RawSnapshot {
  snapshot: { meta: { node_fields: string[]; node_types: [string[]]; edge_fields: string[]; edge_types: [string[]] } };
  nodes: number[];
  edges: number[];
  strings: string[];
}

let written = 0;
/** Writes a heap snapshot into the temp folder (V8 collects garbage first); returns its path. */
export function writeSnapshot(): string {
  return writeHeapSnapshot(path.join(tmpdir(), `loopctl-bench-${process.pid}-${written++}.heapsnapshot`));
}

/**
 * The nodes of `after` whose id is not in `before`, grouped and sorted by total self size.
 * `by`: 'name' groups by `type:name` (strings by type only); 'holder' adds the first strong
 * retainer (`type:name.edge`), which tells e.g. whose closure or whose array it is.
 * Deletes both files unless `keep`.
 */
export function diffSnapshots(before: string, after: string, by: 'name' | 'holder' = 'name', keep = false): Group[] {
  const old = new Set<number>();
  const a = JSON.parse(readFileSync(before, 'utf8')) as RawSnapshot;
  const aw = a.snapshot.meta.node_fields.length;
  const aid = a.snapshot.meta.node_fields.indexOf('id');
  for (let i = aid; i < a.nodes.length; i += aw) old.add(a.nodes[i]!);
  const raw = JSON.parse(readFileSync(after, 'utf8')) as RawSnapshot;
  const {
    node_fields: nf,
    node_types: [nt],
    edge_fields: ef,
    edge_types: [et],
  } = raw.snapshot.meta;
  const W = nf.length;
  const EW = ef.length;
  const [iT, iN, iI, iS, iE] = ['type', 'name', 'id', 'self_size', 'edge_count'].map((f) =>
    nf.indexOf(f),
  ) as number[] as [number, number, number, number, number];
  const [eT, eN, eTo] = ['type', 'name_or_index', 'to_node'].map((f) => ef.indexOf(f)) as [number, number, number];
  const n = raw.nodes.length / W;
  const keyOf = (i: number): string => {
    const type = nt[raw.nodes[i * W + iT]!]!;
    return type.endsWith('string') ? `(${type})` : `${type}:${raw.strings[raw.nodes[i * W + iN]!]}`;
  };
  const holder = new Array<string | undefined>(n);
  if (by === 'holder') {
    let e = 0;
    for (let i = 0; i < n; i++) {
      const count = raw.nodes[i * W + iE]!;
      for (let k = e; k < e + count; k++) {
        const to = raw.edges[k * EW + eTo]! / W;
        const type = et[raw.edges[k * EW + eT]!]!;
        if (holder[to] !== undefined || type === 'weak') continue;
        const name =
          type === 'element' || type === 'hidden'
            ? `[${raw.edges[k * EW + eN]}]`
            : raw.strings[raw.edges[k * EW + eN]!];
        holder[to] = `${keyOf(i)}.${name}`;
      }
      e += count;
    }
  }
  const groups = new Map<string, { count: number; bytes: number }>();
  for (let i = 0; i < n; i++) {
    if (old.has(raw.nodes[i * W + iI]!)) continue;
    const key = by === 'holder' ? `${keyOf(i)} <= ${holder[i] ?? '?'}` : keyOf(i);
    const g = groups.get(key) ?? { count: 0, bytes: 0 };
    g.count++;
    g.bytes += raw.nodes[i * W + iS]!;
    groups.set(key, g);
  }
  if (!keep) for (const f of [before, after]) rmSync(f, { force: true });
  return [...groups].map(([key, g]) => ({ key, ...g })).sort((x, y) => y.bytes - x.bytes);
}
