/** Small statistics and table helpers for the benchmarks (no dependencies). */

/** The q-quantile (0..1) of `values` by nearest rank on a sorted copy. */
export function quantile(values: readonly number[], q: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[rank]!;
}

export const median = (values: readonly number[]): number => quantile(values, 0.5);

export interface Summary {
  readonly n: number;
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
  readonly min: number;
}

export function summarize(values: readonly number[]): Summary {
  return {
    n: values.length,
    p50: quantile(values, 0.5),
    p99: quantile(values, 0.99),
    max: Math.max(...values),
    min: Math.min(...values),
  };
}

/** Formats a number with `digits` decimals (NaN as "-"). */
export function fmt(value: number, digits = 1): string {
  return Number.isFinite(value) ? value.toFixed(digits) : '-';
}

/** Prints an aligned text table (first row = header). */
export function printTable(title: string, rows: readonly (readonly string[])[]): void {
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map((r) => (r[c] ?? '').length)));
  const line = (r: readonly string[]) =>
    r.map((cell, c) => (c === 0 ? cell.padEnd(widths[c]!) : cell.padStart(widths[c]!))).join('  ');
  console.log(`\n${title}`);
  console.log(line(rows[0]!));
  console.log(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const r of rows.slice(1)) console.log(line(r));
}

/** CPU time (user + system) of this process in µs since `start` (a `process.cpuUsage()` value). */
export function cpuSince(start: NodeJS.CpuUsage): number {
  const d = process.cpuUsage(start);
  return d.user + d.system;
}

/** Resolves after one macrotask (lets I/O and timers run). */
export const tick = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Forces a full GC (needs `--expose-gc`), a few times so weak references and finalizers settle. */
export async function fullGc(): Promise<void> {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error('run node with --expose-gc (npm run bench does)');
  for (let i = 0; i < 3; i++) {
    gc();
    await tick();
  }
}

/** `process.getActiveResourcesInfo()` as counts per resource type. */
export function resourceCounts(): Map<string, number> {
  const counts = new Map<string, number>();
  for (const r of process.getActiveResourcesInfo()) counts.set(r, (counts.get(r) ?? 0) + 1);
  return counts;
}

/** Resources present now beyond `baseline` (type → extra count), as "Type×n" text ('none' when nothing is left). */
export function resourceDelta(baseline: Map<string, number>, now = resourceCounts()): string {
  const extra: string[] = [];
  for (const [type, n] of now) {
    const d = n - (baseline.get(type) ?? 0);
    if (d > 0) extra.push(`${type}×${d}`);
  }
  return extra.length === 0 ? 'none' : extra.join(', ');
}

/** The machine, for the report header. */
export async function machine(): Promise<string> {
  const { readFileSync } = await import('node:fs');
  const { availableParallelism, totalmem } = await import('node:os');
  let cpu = 'unknown';
  try {
    cpu = /model name\s*:\s*(.*)/.exec(readFileSync('/proc/cpuinfo', 'utf8'))?.[1] ?? cpu;
  } catch {
    /* not Linux */
  }
  return `${availableParallelism()} cpu(s), ${cpu}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, node ${process.version}`;
}

/** "median (min–max)" of `values` with `digits` decimals. */
export function medianRange(values: readonly number[], digits = 1): string {
  if (values.length === 0) return '-';
  return `${fmt(median(values), digits)} (${fmt(Math.min(...values), digits)}–${fmt(Math.max(...values), digits)})`;
}

/** The 1-minute load average (Linux /proc/loadavg), for the tables: how busy the machine was. */
export async function loadAverage(): Promise<string> {
  const { loadavg } = await import('node:os');
  return loadavg()
    .map((x) => x.toFixed(2))
    .join(' ');
}
