/**
 * An OpenTelemetry SDK recording in memory, for the telemetry specs: spans through a processor that
 * notes the order they start in and counts each `end()` (a second end of one span is a bug the SDK
 * would only log), metrics through a pull reader.
 */
import { SpanStatusCode, type Attributes, type Span } from '@opentelemetry/api';
import {
  AggregationTemporality,
  MeterProvider,
  MetricReader,
  type DataPoint,
  type Histogram as HistogramPoint,
} from '@opentelemetry/sdk-metrics';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
  type ReadableSpan,
  type SpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { withTelemetry, type TelemetryOptions } from '../../src/otel/index.js';

/** A span as the specs compare it: its name, what it says, and its children in start order. */
export interface SpanNode {
  name: string;
  kind?: number;
  status?: { code: 'ERROR'; message?: string };
  attributes: Attributes;
  events?: { name: string; attributes: Attributes }[];
  children?: SpanNode[];
}

class Pull extends MetricReader {
  constructor() {
    super({ aggregationTemporalitySelector: () => AggregationTemporality.CUMULATIVE });
  }
  protected override async onForceFlush(): Promise<void> {}
  protected override async onShutdown(): Promise<void> {}
}

/** What ended twice, and how many spans started and ended, per span id. */
class Counting implements SpanProcessor {
  readonly started: Span[] = [];
  readonly ends = new Map<string, number>();
  onStart(span: Span): void {
    this.started.push(span);
    const id = span.spanContext().spanId;
    this.ends.set(id, 0);
    const end = span.end.bind(span);
    span.end = (t) => {
      this.ends.set(id, (this.ends.get(id) ?? 0) + 1);
      end(t);
    };
  }
  onEnd(): void {}
  async forceFlush(): Promise<void> {}
  async shutdown(): Promise<void> {}
}

export function otelHarness(options: Omit<TelemetryOptions, 'tracerProvider' | 'meterProvider'> = {}) {
  const exporter = new InMemorySpanExporter();
  const counting = new Counting();
  const tracerProvider = new BasicTracerProvider({ spanProcessors: [counting, new SimpleSpanProcessor(exporter)] });
  const reader = new Pull();
  const meterProvider = new MeterProvider({ readers: [reader] });
  const telemetry = withTelemetry({ ...options, tracerProvider, meterProvider });

  const finished = (): ReadableSpan[] => exporter.getFinishedSpans();
  /** Forgets every span so far (one harness across many runs). */
  const reset = (): void => {
    exporter.reset();
    counting.started.length = 0;
    counting.ends.clear();
  };
  /** Span ids started but not ended, and ids ended more than once. */
  const endings = () => ({
    started: counting.started.length,
    open: [...counting.ends].filter(([, n]) => n === 0).map(([id]) => id),
    twice: [...counting.ends].filter(([, n]) => n > 1).map(([id]) => id),
  });
  /** Every finished span as a tree, children in the order they started; roots in start order. */
  const tree = (opts: { kinds?: boolean } = {}): SpanNode[] => {
    const order = new Map(counting.started.map((s, i) => [s.spanContext().spanId, i]));
    const rank = (s: ReadableSpan) => order.get(s.spanContext().spanId)!;
    const spans = [...finished()].sort((a, b) => rank(a) - rank(b));
    const ids = new Set(spans.map((s) => s.spanContext().spanId));
    const node = (s: ReadableSpan): SpanNode => {
      const out: SpanNode = { name: s.name, attributes: { ...s.attributes } };
      if (opts.kinds) out.kind = s.kind;
      if (s.status.code === SpanStatusCode.ERROR) out.status = { code: 'ERROR', message: s.status.message };
      if (s.events.length > 0) out.events = s.events.map((e) => ({ name: e.name, attributes: { ...e.attributes } }));
      const children = spans.filter((c) => c.parentSpanContext?.spanId === s.spanContext().spanId).map(node);
      if (children.length > 0) out.children = children;
      return out;
    };
    return spans.filter((s) => !s.parentSpanContext || !ids.has(s.parentSpanContext.spanId)).map(node);
  };
  /**
   * The span tree as indented lines, each span's name with how it ended: `!ERROR(error.type)`,
   * `~interrupted`, or nothing for a plain end; and its events by name.
   */
  const shape = (): string[] => {
    const lines: string[] = [];
    const walk = (n: SpanNode, depth: number) => {
      const how = n.status ? ` !ERROR(${String(n.attributes['error.type'])})` : '';
      const cut = n.attributes['loopctl.interrupted'] === true ? ' ~interrupted' : '';
      const events = (n.events ?? []).map((e) => ` +${e.name}`).join('');
      lines.push(`${'  '.repeat(depth)}${n.name}${how}${cut}${events}`);
      for (const c of n.children ?? []) walk(c, depth + 1);
    };
    for (const root of tree()) walk(root, 0);
    return lines;
  };
  /** The data points of metric `name`, each as its attributes and value (a histogram's count and sum). */
  const metric = async (name: string) => {
    const { resourceMetrics } = await reader.collect();
    const found = resourceMetrics.scopeMetrics.flatMap((s) => s.metrics).find((m) => m.descriptor.name === name);
    return (found?.dataPoints ?? []).map((p: DataPoint<unknown>) => {
      const value = p.value as number | HistogramPoint;
      return typeof value === 'number'
        ? { attributes: p.attributes, value }
        : { attributes: p.attributes, count: value.count, sum: value.sum };
    });
  };
  return { telemetry, tracerProvider, meterProvider, exporter, finished, reset, tree, shape, endings, metric };
}

/** Attributes every `chat` span of a test model (`scripted`, no provider prefix) has. */
export function chatAttributes(attempt: number, cause: string, model = 'scripted', stream = true): Attributes {
  return {
    'gen_ai.operation.name': 'chat',
    'gen_ai.provider.name': model,
    'gen_ai.request.model': model,
    'gen_ai.request.stream': stream,
    'loopctl.attempt': attempt,
    'loopctl.attempt_cause': cause,
  };
}
