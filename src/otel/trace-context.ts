import {
  ROOT_CONTEXT,
  TraceFlags,
  context as otelContext,
  createTraceState,
  isSpanContextValid,
  trace,
  type Context,
  type SpanContext,
} from '@opentelemetry/api';
import { parseTraceparent, type TraceCarrier } from '../runs/trace-carrier.js';

/**
 * The context a traced operation starts in: the active span's when there is one (an HTTP server
 * span of the app's own instrumentation, a span of the caller), else the caller's remote span
 * from `carrier` (a W3C `traceparent`), else the active context. Parsed here, not by the global
 * propagator, so it works whichever propagator an app registered.
 */
export function parentContext(carrier: TraceCarrier | undefined): Context {
  const active = otelContext.active();
  const current = trace.getSpan(active)?.spanContext();
  if (current !== undefined && isSpanContextValid(current)) return active;
  const parsed = carrier === undefined ? undefined : parseTraceparent(carrier.traceparent);
  if (parsed === undefined) return active;
  const remote: SpanContext = {
    traceId: parsed.traceId,
    spanId: parsed.spanId,
    traceFlags: parsed.flags & TraceFlags.SAMPLED,
    isRemote: true,
    ...(carrier?.tracestate !== undefined ? { traceState: createTraceState(carrier.tracestate) } : {}),
  };
  return trace.setSpanContext(ROOT_CONTEXT, remote);
}

/** The `traceparent` (version 00) of a span context, or undefined for an invalid one. */
export function traceparentOf(span: SpanContext): string | undefined {
  if (!isSpanContextValid(span)) return undefined;
  const flags = (span.traceFlags & 0xff).toString(16).padStart(2, '0');
  return `00-${span.traceId}-${span.spanId}-${flags}`;
}
