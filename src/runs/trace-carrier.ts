/**
 * W3C Trace Context carried with a run's start (`Runs.start({ trace })`), so the run's spans join
 * the caller's trace (docs/telemetry.md, "Context"): the HTTP handler reads it from the request's
 * `traceparent` and `tracestate` headers; a queue carries it to its worker. Isomorphic, no
 * OpenTelemetry: only the header values, checked.
 */
export interface TraceCarrier {
  /**
   * `version-traceid-parentid-flags`, lowercase hex, e.g.
   * `00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01`.
   */
  readonly traceparent: string;
  /** The vendors' list (`key=value,…`), passed on as it came. */
  readonly tracestate?: string;
}

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;
const ZERO_TRACE = '0'.repeat(32);
const ZERO_SPAN = '0'.repeat(16);

/**
 * The parts of a valid `traceparent` (W3C Trace Context, level 1), or undefined for anything else:
 * version `ff`, an all-zero trace or parent id, or (version `00`) anything after the flags.
 */
export function parseTraceparent(
  value: unknown,
): { readonly traceId: string; readonly spanId: string; readonly flags: number } | undefined {
  if (typeof value !== 'string' || value.length > 512) return undefined;
  const m = TRACEPARENT.exec(value.trim());
  if (m === null) return undefined;
  const [, version, traceId, spanId, flags, rest] = m;
  if (version === 'ff' || (version === '00' && rest !== undefined)) return undefined;
  if (traceId === ZERO_TRACE || spanId === ZERO_SPAN) return undefined;
  return { traceId: traceId!, spanId: spanId!, flags: parseInt(flags!, 16) };
}

/**
 * The carrier of a request's trace headers (values as Node gives them: a repeated `tracestate`
 * is joined with commas), or undefined when `traceparent` is absent or invalid: then the trace
 * context is ignored whole, as the W3C specification asks.
 */
export function traceCarrierOf(traceparent: unknown, tracestate: unknown): TraceCarrier | undefined {
  if (parseTraceparent(traceparent) === undefined) return undefined;
  const state = Array.isArray(tracestate) ? tracestate.join(',') : tracestate;
  const carrier = { traceparent: (traceparent as string).trim() };
  return typeof state === 'string' && state.trim() !== '' ? { ...carrier, tracestate: state.trim() } : carrier;
}
