import { SpanKind, context as otelContext, trace, type Context, type Span, type Tracer } from '@opentelemetry/api';
import { describeValue } from '../describe.js';
import type { TelemetryMcpRequest } from '../engine/telemetry.js';
import {
  ATTR_GEN_AI_OPERATION_NAME,
  ATTR_GEN_AI_TOOL_CALL_ID,
  ATTR_GEN_AI_TOOL_NAME,
  ATTR_MCP_METHOD_NAME,
  GEN_AI_OPERATION_NAME_VALUE_EXECUTE_TOOL,
} from './semconv.js';
import { endSpan, type SpanEnd } from './spans.js';

/**
 * One MCP request (`tools/call {tool}`, a CLIENT span) as a child of its `execute_tool` span, sent
 * with the span active so the transport's own instrumentation nests under it. It ends when the
 * request settles: an `isError` result is `error.type` `tool_error`; a request torn down (its
 * signal aborted by a cancel or a deadline) ends interrupted at that moment, before its run ends.
 * `open` tracks it until then, so the run can end one its signal never reached.
 */
export function mcpSpan<T>(
  tracer: Tracer,
  parent: Context,
  request: TelemetryMcpRequest,
  fn: () => Promise<T>,
  open: Set<() => void>,
): Promise<T> {
  const attributes = {
    [ATTR_MCP_METHOD_NAME]: request.method,
    [ATTR_GEN_AI_OPERATION_NAME]: GEN_AI_OPERATION_NAME_VALUE_EXECUTE_TOOL,
    [ATTR_GEN_AI_TOOL_NAME]: request.tool,
    [ATTR_GEN_AI_TOOL_CALL_ID]: request.callId,
  };
  const name = `${request.method} ${request.tool}`;
  const span: Span = tracer.startSpan(name, { kind: SpanKind.CLIENT, attributes }, parent);
  const { signal } = request;
  let ended = false;
  const end = (how: SpanEnd): void => {
    if (ended) return;
    ended = true;
    open.delete(interrupt);
    signal.removeEventListener('abort', interrupt);
    endSpan(span, how);
  };
  const interrupt = (): void => end({ kind: 'interrupted' });
  open.add(interrupt);
  signal.addEventListener('abort', interrupt, { once: true });
  const sent = otelContext.with(trace.setSpan(parent, span), fn);
  sent.then(
    (result) => {
      const isError =
        result !== null && typeof result === 'object' && (result as { isError?: unknown }).isError === true;
      end(isError ? { kind: 'error', type: 'tool_error', message: 'the MCP tool reported an error' } : { kind: 'ok' });
    },
    (err: unknown) => {
      const type = err instanceof Error ? err.name : 'Error';
      end({ kind: 'error', type, message: describeValue(err, 'thrown value') });
    },
  );
  return sent;
}
