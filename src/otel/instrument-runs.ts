import {
  SpanKind,
  context as otelContext,
  trace,
  type Attributes,
  type Context,
  type SpanContext,
  type Tracer,
} from '@opentelemetry/api';
import { describeValue } from '../describe.js';
import { ConfigurationError } from '../errors.js';
import type { TraceCarrier } from '../runs/trace-carrier.js';
import type { Runs } from '../runs/types.js';
import { clip } from './content.js';
import { resolveOptions, type TelemetryOptions } from './options.js';
import * as C from './semconv.js';
import { endSpan, type SpanEnd } from './spans.js';
import { parentContext, traceparentOf } from './trace-context.js';

/**
 * `runs` with a span per operation (docs/telemetry.md, "Runs and HTTP"): `runs.start {agent}`,
 * `runs.cancel`, `runs.steer`, `runs.withdraw`, `runs.stop`, `runs.decide`, `runs.cancel_tool_call`, each
 * run with its span active, so a run started by `runs.start` (given `telemetry: withTelemetry()` in its run options)
 * is its child where the context reaches it (an AsyncLocalStorage context manager carries it
 * across `localRuns`' awaits). `start` runs in the caller's trace: the active span, else
 * `req.trace` (the `traceparent` the HTTP handler read); it answers `traceparent`, the start's own,
 * which the handler writes back, and passes it on as `req.trace` (so `queueRuns` carries it to the
 * worker, where the run's span is the child of `runs.start`). `events` is passed through.
 * `captureContent` adds steering text.
 *
 * @throws {ConfigurationError} naming the field for bad options or a `runs` without a method.
 */
export function instrumentRuns(runs: Runs, options?: TelemetryOptions): Runs {
  for (const method of [
    'start',
    'events',
    'cancel',
    'stop',
    'steer',
    'withdraw',
    'decide',
    'cancelToolCall',
  ] as const) {
    if (typeof runs?.[method] !== 'function') throw new ConfigurationError(`runs.${method}`, 'must be a function');
  }
  const { tracerProvider, maxChars } = resolveOptions(options, 'options');
  let tracer: Tracer | undefined;
  const traced = <T>(
    name: string,
    attributes: Attributes,
    parent: Context,
    call: (own: SpanContext) => Promise<T>,
    ok: (value: T) => Attributes,
  ): { result: Promise<T>; traceparent: string | undefined } => {
    tracer ??= (tracerProvider ?? trace.getTracerProvider()).getTracer('loopctl');
    const span = tracer.startSpan(name, { kind: SpanKind.INTERNAL, attributes }, parent);
    const end = (how: SpanEnd) => endSpan(span, how);
    let result: Promise<T>;
    try {
      result = otelContext.with(trace.setSpan(parent, span), call, undefined, span.spanContext());
    } catch (error) {
      result = Promise.reject(error);
    }
    result = result.then(
      (value) => (end({ kind: 'ok', attributes: ok(value) }), value),
      (error: unknown) => {
        const type = error instanceof Error ? error.name : 'Error';
        end({ kind: 'error', type, message: describeValue(error, 'thrown value') });
        throw error;
      },
    );
    return { result, traceparent: traceparentOf(span.spanContext()) };
  };
  const here = () => otelContext.active();
  const runId = (id: unknown): Attributes => ({ [C.ATTR_LOOPCTL_RUN_ID]: String(id) });
  const result = (value: boolean): Attributes => ({ [C.ATTR_LOOPCTL_RUNS_RESULT]: value });
  const tracedResume =
    (resume: NonNullable<Runs['resume']>): NonNullable<Runs['resume']> =>
    (req) => {
      const attributes: Attributes = {
        [C.ATTR_GEN_AI_AGENT_NAME]: String(req?.agent),
        [C.ATTR_GEN_AI_CONVERSATION_ID]: String(req?.threadId),
      };
      const call = (own: SpanContext) => resume(withTrace(req, own));
      const name = `runs.resume ${String(req?.agent)}`;
      const started = traced(name, attributes, parentContext(req?.trace), call, (s) => runId(s.runId));
      const { traceparent } = started;
      return started.result.then((s) => (traceparent === undefined ? s : { ...s, traceparent }));
    };
  return {
    start(req) {
      const attributes: Attributes = {
        [C.ATTR_GEN_AI_AGENT_NAME]: String(req?.agent),
        [C.ATTR_GEN_AI_CONVERSATION_ID]: String(req?.threadId),
      };
      const steered = (s: { steeringId?: string }) =>
        s.steeringId !== undefined ? { [C.ATTR_LOOPCTL_STEERING_ID]: s.steeringId } : {};
      const name = `runs.start ${String(req?.agent)}`;
      // The start's own context goes on as `trace`: a queue carries it to the worker that runs the run.
      const call = (own: SpanContext) => runs.start(withTrace(req, own));
      const started = traced(name, attributes, parentContext(req?.trace), call, (s) => ({
        ...runId(s.runId),
        ...steered(s),
      }));
      const { traceparent } = started;
      return started.result.then((s) => (traceparent === undefined ? s : { ...s, traceparent }));
    },
    // `resume` (optional) is traced like `start` when the wrapped Runs has it.
    ...(runs.resume === undefined ? {} : { resume: tracedResume(runs.resume.bind(runs)) }),
    events: (id, opts) => runs.events(id, opts),
    // `state` (optional) passes through untraced, like `events`.
    ...(runs.state === undefined ? {} : { state: runs.state.bind(runs) }),
    cancel(id, reason, principal) {
      const attributes = { ...runId(id), [C.ATTR_LOOPCTL_CANCEL_REASON]: describeValue(reason, 'reason') };
      return traced('runs.cancel', attributes, here(), () => runs.cancel(id, reason, principal), result).result;
    },
    stop(id, opts, principal) {
      return traced('runs.stop', runId(id), here(), () => runs.stop(id, opts, principal), result).result;
    },
    steer(id, text, principal) {
      const attributes = runId(id);
      if (maxChars !== undefined && typeof text === 'string') {
        attributes[C.ATTR_LOOPCTL_STEERING_CONTENT] = clip(text, maxChars);
      }
      return traced(
        'runs.steer',
        attributes,
        here(),
        () => runs.steer(id, text, principal),
        (s) => ({ [C.ATTR_LOOPCTL_STEERING_ID]: s.id }),
      ).result;
    },
    withdraw(id, steeringId, principal) {
      const attributes = { ...runId(id), [C.ATTR_LOOPCTL_STEERING_ID]: String(steeringId) };
      return traced('runs.withdraw', attributes, here(), () => runs.withdraw(id, steeringId, principal), result).result;
    },
    decide(id, callId, decision, principal) {
      const attributes = { ...runId(id), [C.ATTR_GEN_AI_TOOL_CALL_ID]: String(callId) };
      const call = () => runs.decide(id, callId, decision, principal);
      return traced('runs.decide', attributes, here(), call, result).result;
    },
    cancelToolCall(id, callId, reason, principal) {
      const attributes = { ...runId(id), [C.ATTR_GEN_AI_TOOL_CALL_ID]: String(callId) };
      const call = () => runs.cancelToolCall(id, callId, reason, principal);
      return traced('runs.cancel_tool_call', attributes, here(), call, result).result;
    },
  };
}

/** `req` with `trace` set to the W3C trace context of `span` (as it was when `span` is not valid). */
function withTrace<R extends { trace?: TraceCarrier }>(req: R, span: SpanContext): R {
  const traceparent = traceparentOf(span);
  if (traceparent === undefined || req === null || typeof req !== 'object') return req;
  const tracestate = span.traceState?.serialize();
  return { ...req, trace: tracestate ? { traceparent, tracestate } : { traceparent } };
}
