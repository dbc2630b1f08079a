import { SpanStatusCode, type Attributes, type Span } from '@opentelemetry/api';
import { ATTR_ERROR_TYPE, ATTR_LOOPCTL_INTERRUPTED } from './semconv.js';

/** What ended a span: success, an error (`error.type` and the status message), or a cancel that cut it short. */
export type SpanEnd =
  | { readonly kind: 'ok'; readonly attributes?: Attributes }
  | { readonly kind: 'error'; readonly type: string; readonly message: string; readonly attributes?: Attributes }
  | { readonly kind: 'interrupted' };

/**
 * Ends `span` the way `end` says: an error sets `error.type` and an ERROR status with its message;
 * an interrupted span (its run was cancelled, or failed elsewhere) gets `loopctl.interrupted` and
 * no error status ("cancelled is not failed").
 */
export function endSpan(span: Span, end: SpanEnd): void {
  if (end.kind === 'interrupted') span.setAttribute(ATTR_LOOPCTL_INTERRUPTED, true);
  else {
    if (end.attributes !== undefined) span.setAttributes(end.attributes);
    if (end.kind === 'error') {
      span.setAttribute(ATTR_ERROR_TYPE, end.type);
      span.setStatus({ code: SpanStatusCode.ERROR, message: end.message });
    }
  }
  span.end();
}

/** A serialised error (`{ name, message }`) as a span's error end. */
export function errorEnd(error: { readonly name: string; readonly message: string }, attributes?: Attributes): SpanEnd {
  return { kind: 'error', type: error.name, message: error.message, ...(attributes ? { attributes } : {}) };
}

/** Seconds between two `performance.now()` readings. */
export function seconds(from: number, to: number): number {
  return Math.max(0, to - from) / 1000;
}
