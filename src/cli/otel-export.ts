import type { ReadableSpan, SpanExporter } from '@opentelemetry/sdk-trace-base';
import { checkBaseURL } from './args.js';
import { UsageError } from './usage-error.js';
import type { Output } from './output.js';
import { sanitizeLine } from './sanitize.js';

/** `ExportResultCode.SUCCESS` of `@opentelemetry/core` (a stable 0; the CLI does not load core for one number). */
const SUCCESS = 0;

/** How long (ms) the CLI waits at exit for the last spans to go out when no OTLP timeout variable is set. */
export const FLUSH_BOUND_MS = 500;

/** The exporters `OTEL_TRACES_EXPORTER` names (the OpenTelemetry SDK convention), as the CLI supports them. */
export type TracesExporterName = 'otlp' | 'console' | 'none';

/**
 * `OTEL_TRACES_EXPORTER`: a comma-separated list of `otlp` (the default), `console` (each span as one
 * line on stderr as it ends) and `none` (no export), as the OpenTelemetry SDK reads it; `none` with
 * another one is that other one.
 * @throws UsageError naming the variable for any other value.
 */
export function tracesExporters(env: NodeJS.ProcessEnv): ReadonlySet<TracesExporterName> {
  const raw = env['OTEL_TRACES_EXPORTER']?.trim() || 'otlp';
  const names = new Set<TracesExporterName>();
  for (const word of raw.split(',').map((w) => w.trim().toLowerCase())) {
    if (word !== 'otlp' && word !== 'console' && word !== 'none')
      throw new UsageError(
        `OTEL_TRACES_EXPORTER must be otlp, console or none, or a comma-separated list of them ` +
          `(got ${JSON.stringify(raw)})`,
      );
    if (word !== 'none') names.add(word);
  }
  return names;
}

/**
 * The bound (ms) of the flush at exit: `OTEL_EXPORTER_OTLP_TRACES_TIMEOUT`, else
 * `OTEL_EXPORTER_OTLP_TIMEOUT` (the exporter's own variables, a positive number of ms), else
 * {@link FLUSH_BOUND_MS}.
 */
export function flushBoundMs(env: NodeJS.ProcessEnv): number {
  for (const name of ['OTEL_EXPORTER_OTLP_TRACES_TIMEOUT', 'OTEL_EXPORTER_OTLP_TIMEOUT']) {
    const ms = Number(env[name]);
    if (env[name]?.trim() && Number.isFinite(ms) && ms > 0) return ms;
  }
  return FLUSH_BOUND_MS;
}

/**
 * Where the OTLP/HTTP exporter sends spans, as it reads the standard variables (for the warning).
 * @throws UsageError naming `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` or `OTEL_EXPORTER_OTLP_ENDPOINT` when the one
 *   it reads is not an http(s) URL (the exporter would send nothing, and the warning would blame the collector).
 */
export function checkedTracesEndpoint(env: NodeJS.ProcessEnv): string {
  for (const name of ['OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', 'OTEL_EXPORTER_OTLP_ENDPOINT']) {
    const value = env[name]?.trim();
    if (value) {
      checkBaseURL(name, value);
      break;
    }
  }
  return tracesEndpoint(env);
}

/** Where the OTLP/HTTP exporter sends spans, as it reads the standard variables (for the warning). */
export function tracesEndpoint(env: NodeJS.ProcessEnv): string {
  const own = env['OTEL_EXPORTER_OTLP_TRACES_ENDPOINT']?.trim();
  if (own) return own;
  const base = env['OTEL_EXPORTER_OTLP_ENDPOINT']?.trim() || 'http://localhost:4318';
  return `${base.replace(/\/+$/, '')}/v1/traces`;
}

/**
 * The account of the OTLP export: spans ended, spans the collector took, and the one warning the
 * command prints when it did not take them all (`warn` is called at most once).
 */
export class ExportAccount {
  ended = 0;
  exported = 0;
  #warned = false;

  constructor(
    private readonly endpoint: string,
    private readonly stderr: Output,
  ) {}

  /** One line on stderr, once: the collector did not take the spans, and how to see them without one. */
  warn(why: string): void {
    if (this.#warned) return;
    this.#warned = true;
    const lost = Math.max(0, this.ended - this.exported);
    this.stderr.write(
      `loopctl: --otel: the collector at ${sanitizeLine(this.endpoint)} ${sanitizeLine(why)}; ` +
        `${lost} span${lost === 1 ? '' : 's'} not exported (set OTEL_EXPORTER_OTLP_ENDPOINT, or ` +
        `OTEL_TRACES_EXPORTER=console to print spans here)\n`,
    );
  }

  /** `exporter` with each export counted; a failed export warns (see {@link warn}). */
  watch(exporter: SpanExporter): SpanExporter {
    return {
      export: (spans, done) =>
        exporter.export(spans, (result) => {
          if (result.code === SUCCESS) this.exported += spans.length;
          else this.warn(`did not take the spans (${result.error?.message ?? 'export failed'})`);
          done(result);
        }),
      shutdown: () => exporter.shutdown(),
      forceFlush: () => exporter.forceFlush?.() ?? Promise.resolve(),
    };
  }
}

/**
 * Resolves when `flush` does, or after `boundMs` (a timer, cleared when `flush` wins), calling
 * `onLate` then: the command never waits longer than the bound for a collector.
 */
export async function bounded(flush: Promise<unknown>, boundMs: number, onLate: () => void): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), boundMs)));
  try {
    const first = await Promise.race([
      flush.then(
        () => 'flushed' as const,
        () => 'flushed' as const,
      ),
      late,
    ]);
    if (first === 'late') onLate();
  } finally {
    clearTimeout(timer);
  }
}

const hex = (id: string | undefined) => id ?? '-';
const ms = ([s, ns]: readonly [number, number]) => Math.round(s * 1000 + ns / 1e6);
const value = (v: unknown): string => (Array.isArray(v) ? v.map(String).join(',') : String(v));

/**
 * `OTEL_TRACES_EXPORTER=console`: each span as one line on `out` as it ends, in words:
 * `[span] chat gpt-4o-mini · 12 ms · ok · trace 4bf9… span 00f0… parent 1a2b… · key=value …`
 * (text loopctl did not write is sanitised, see ./sanitize.ts).
 */
export function lineExporter(out: Output): SpanExporter {
  return {
    export: (spans, done) => {
      for (const span of spans) out.write(`${spanLine(span)}\n`);
      done({ code: SUCCESS });
    },
    shutdown: async () => undefined,
  };
}

/** The line of one span (see {@link lineExporter}). */
export function spanLine(span: ReadableSpan): string {
  const { traceId, spanId } = span.spanContext();
  const failed = span.status.code === 2; // SpanStatusCode.ERROR
  const status = failed ? `error${span.status.message ? `: ${span.status.message}` : ''}` : 'ok';
  const attributes = Object.entries(span.attributes).map(([k, v]) => `${k}=${value(v)}`);
  const parts = [
    `${span.name}`,
    `${ms(span.duration)} ms`,
    status,
    `trace ${traceId} span ${spanId} parent ${hex(span.parentSpanContext?.spanId)}`,
    ...(attributes.length > 0 ? [attributes.join(' ')] : []),
    ...span.events.map((e) => `event ${e.name}`),
  ];
  return sanitizeLine(`[span] ${parts.join(' · ')}`);
}
