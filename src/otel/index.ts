/**
 * loopctl/otel: OpenTelemetry traces and metrics of runs, after the GenAI semantic conventions
 * (docs/telemetry.md). Needs the optional peer dependency `@opentelemetry/api`, and an SDK of the
 * app's choosing to record anything; the loopctl core never imports OpenTelemetry. Isomorphic.
 */
export { withTelemetry } from './with-telemetry.js';
export { instrumentRuns } from './instrument-runs.js';
export type { TelemetryOptions } from './options.js';
export * as semconv from './semconv.js';
