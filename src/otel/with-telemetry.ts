import { trace, type Context, type Tracer } from '@opentelemetry/api';
import type { RunObserver, RunTelemetry, TelemetryRun } from '../engine/telemetry.js';
import { InstrumentCache } from './instruments.js';
import { resolveOptions, type TelemetryOptions } from './options.js';
import { RunTrace, type Shared } from './run-trace.js';
import { parentContext } from './trace-context.js';

/**
 * OpenTelemetry traces and metrics of runs, as the `telemetry` run option (docs/telemetry.md):
 * `run(agent, input, { telemetry: withTelemetry() })`. Each run gets an `invoke_agent {agent}` span
 * (a child of the span active where the run is subscribed, else of the remote span of its `trace`
 * run option; a sub-run's is a child of its `execute_tool` span), a `chat {model}` span per model
 * attempt, an `execute_tool {tool}` span per tool call and a `tools/call {tool}` span per MCP
 * request, named and attributed after the GenAI
 * semantic conventions; tools, hooks, model and MCP requests run with their span active, so a
 * user's own instrumentation nests under it. Records the GenAI client metrics and loopctl's
 * `loopctl.cancel.duration` and `loopctl.runs.ended`. Content capture is off unless
 * `captureContent` is given. One value may serve any number of runs, at once or one after another;
 * without an SDK registered it makes no OpenTelemetry call per streamed chunk.
 *
 * @throws {ConfigurationError} naming the field for a bad option (e.g. `options.captureContent.maxChars`).
 * @example
 * const telemetry = withTelemetry({ captureContent: { maxChars: 2_000 } });
 * run(agent, 'Summarise the logs', { telemetry }).subscribe(render);
 */
export function withTelemetry(options?: TelemetryOptions): RunTelemetry {
  const resolved = resolveOptions(options, 'options');
  const instruments = new InstrumentCache(resolved.meterProvider);
  const calls: Shared['calls'] = [];
  let tracer: Tracer | undefined;
  return {
    open(run: TelemetryRun): RunObserver {
      // The global tracer is a proxy: one got before an SDK is registered still reaches it later.
      tracer ??= (resolved.tracerProvider ?? trace.getTracerProvider()).getTracer('loopctl');
      const shared: Shared = { tracer, instruments: instruments.get(), maxChars: resolved.maxChars, calls };
      return new RunTrace(shared, run, parentOf(run, calls));
    },
  };
}

/**
 * A sub-run's parent is the `execute_tool` span of the call it runs in; any other run's, the active span, else
 * the remote span of its `trace` option (a queue worker's run: the caller's in the API process).
 */
function parentOf(run: TelemetryRun, calls: Shared['calls']): Context {
  const parent = run.parent;
  if (parent !== undefined) {
    for (let i = calls.length - 1; i >= 0; i--) {
      const call = calls[i]!;
      if (call.runId === parent.runId && call.callId === parent.callId) return call.context;
    }
  }
  return parentContext(run.trace);
}
