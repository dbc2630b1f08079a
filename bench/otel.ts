/**
 * loopctl/otel's cost (issue 22): CPU per streamed chunk, and per run, of `run()` on a synthetic
 * provider (synchronous text deltas, no I/O, so the engine and telemetry are all that is measured):
 *  - `off`: no `telemetry` option;
 *  - `no-sdk`: `telemetry: withTelemetry()` with no SDK registered (the API's no-ops);
 *  - `sdk`: `withTelemetry()` on an SDK: a BasicTracerProvider with a BatchSpanProcessor (default
 *    batching) whose exporter drops what it gets, and a MeterProvider with a reader.
 * Variants alternate, order rotated each round; medians of 7 rounds (BENCH_ROUNDS), after warm-up.
 */
import { metrics, trace } from '@opentelemetry/api';
import { MeterProvider, MetricReader } from '@opentelemetry/sdk-metrics';
import { BasicTracerProvider, BatchSpanProcessor, type SpanExporter } from '@opentelemetry/sdk-trace-base';
import { Observable } from 'rxjs';
import type { ModelEvent, ModelProvider, RunTelemetry } from '../src/index.js';
import type * as Otel from '../src/otel/index.js';
import { LIB_LABEL, lib, loadEntry } from './lib/loopctl.js';
import { cpuSince, fmt, median, printTable } from './lib/stats.js';

const { defineAgent, run } = lib;
const { withTelemetry } = (await loadEntry('otel/index')) as typeof Otel;

const CHUNKS = Number(process.env['BENCH_CHUNKS'] ?? 20_000);
const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 7);
const RUNS = 2_000;
const WARMUP = 2;

const synthetic = (n: number): ModelProvider => ({
  id: 'synthetic',
  stream: true,
  call: () =>
    new Observable<ModelEvent>((subscriber) => {
      for (let i = 0; i < n && !subscriber.closed; i++) subscriber.next({ type: 'text_delta', delta: ' word' });
      subscriber.next({ type: 'response', response: { text: 'x', toolCalls: [], finishReason: 'stop' } });
      subscriber.complete();
    }),
});

let exported = 0;
const dropping: SpanExporter = {
  export: (spans, done) => {
    exported += spans.length;
    done({ code: 0 });
  },
  shutdown: async () => {},
};
class Reader extends MetricReader {
  protected override async onForceFlush(): Promise<void> {}
  protected override async onShutdown(): Promise<void> {}
}
const tracerProvider = new BasicTracerProvider({ spanProcessors: [new BatchSpanProcessor(dropping)] });
const meterProvider = new MeterProvider({ readers: [new Reader()] });

type Variant = 'off' | 'no-sdk' | 'sdk';
const VARIANTS: readonly Variant[] = ['off', 'no-sdk', 'sdk'];
const telemetryOf: Record<Variant, RunTelemetry | undefined> = {
  off: undefined,
  'no-sdk': withTelemetry(), // nothing registered globally: the API's no-ops
  sdk: withTelemetry({ tracerProvider, meterProvider }),
};

function once(agent: ReturnType<typeof defineAgent>, telemetry: RunTelemetry | undefined): Promise<number> {
  return new Promise((resolve) => {
    let n = 0;
    run(agent, 'hi', telemetry ? { telemetry } : {}).subscribe({
      next: (e) => void (e.type === 'text_delta' && n++),
      complete: () => resolve(n),
    });
  });
}

async function measure(label: string, chunks: number, runs: number, per: 'chunk' | 'run'): Promise<void> {
  const agent = defineAgent({ name: 'bench', instructions: '', model: synthetic(chunks) });
  const cpu = new Map<Variant, number[]>(VARIANTS.map((v) => [v, []]));
  for (let round = 0; round < WARMUP + ROUNDS; round++) {
    const order = VARIANTS.map((_, i) => VARIANTS[(i + round) % VARIANTS.length]!);
    for (const variant of order) {
      const c0 = process.cpuUsage();
      let seen = 0;
      for (let r = 0; r < runs; r++) seen += await once(agent, telemetryOf[variant]);
      const us = cpuSince(c0) / (per === 'chunk' ? chunks * runs : runs);
      if (seen !== chunks * runs) throw new Error(`${variant}: saw ${seen} deltas, expected ${chunks * runs}`);
      if (round >= WARMUP) cpu.get(variant)!.push(us);
    }
  }
  const off = median(cpu.get('off')!);
  const rows = [[`telemetry`, `CPU µs/${per} p50`, 'min', 'max', `+µs/${per} vs off`]];
  for (const v of VARIANTS) {
    const xs = cpu.get(v)!;
    rows.push([v, fmt(median(xs), 3), fmt(Math.min(...xs), 3), fmt(Math.max(...xs), 3), fmt(median(xs) - off, 3)]);
  }
  printTable(`${label}, ${ROUNDS} rounds (+${WARMUP} warm-up), median — ${LIB_LABEL}`, rows);
}

export async function main(): Promise<void> {
  const probe = trace.getTracerProvider().getTracer('x').startSpan('probe');
  if (probe.isRecording() || metrics.getMeterProvider() === meterProvider) {
    throw new Error('no SDK may be registered globally for the no-sdk variant');
  }
  await measure(`streaming: one run of ${CHUNKS} chunks`, CHUNKS, 1, 'chunk');
  await measure(`short runs: ${RUNS} runs of 1 chunk (run span, one chat span)`, 1, RUNS, 'run');
  await tracerProvider.shutdown();
  console.log(`spans exported by the sdk variant's batching processor: ${exported}`);
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
