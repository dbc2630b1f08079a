import type { MeterProvider, TracerProvider } from '@opentelemetry/api';
import { ConfigurationError } from '../errors.js';
import { DEFAULT_MAX_CHARS } from './content.js';

/** Options of `withTelemetry()` and `instrumentRuns()`. */
export interface TelemetryOptions {
  /** Where spans go. Default: the global one (`trace.setGlobalTracerProvider`, e.g. by the Node SDK). */
  readonly tracerProvider?: TracerProvider;
  /** Where metrics go. Default: the global one (`metrics.setGlobalMeterProvider`). */
  readonly meterProvider?: MeterProvider;
  /**
   * Record prompts, outputs, tool arguments and results, steering text (off by default: they may
   * hold personal data). `true` keeps at most 4 096 characters (UTF-16 code units) per attribute;
   * `{ maxChars }` sets that limit. A longer value is cut and ends with `…[truncated N chars]`.
   */
  readonly captureContent?: boolean | { readonly maxChars?: number };
}

/** Options checked once: the providers (or undefined for the global ones) and the content limit (undefined: off). */
export interface ResolvedOptions {
  readonly tracerProvider: TracerProvider | undefined;
  readonly meterProvider: MeterProvider | undefined;
  readonly maxChars: number | undefined;
}

/** @throws {ConfigurationError} naming the field for a bad option. */
export function resolveOptions(options: TelemetryOptions | undefined, where: string): ResolvedOptions {
  if (options === undefined) return { tracerProvider: undefined, meterProvider: undefined, maxChars: undefined };
  if (options === null || typeof options !== 'object') throw new ConfigurationError(where, 'must be an object');
  const { tracerProvider, meterProvider, captureContent } = options;
  if (tracerProvider !== undefined && typeof tracerProvider?.getTracer !== 'function') {
    throw new ConfigurationError(`${where}.tracerProvider`, 'must be an OpenTelemetry TracerProvider');
  }
  if (meterProvider !== undefined && typeof meterProvider?.getMeter !== 'function') {
    throw new ConfigurationError(`${where}.meterProvider`, 'must be an OpenTelemetry MeterProvider');
  }
  return { tracerProvider, meterProvider, maxChars: maxCharsOf(captureContent, `${where}.captureContent`) };
}

function maxCharsOf(capture: TelemetryOptions['captureContent'], field: string): number | undefined {
  if (capture === undefined || capture === false) return undefined;
  if (capture === true) return DEFAULT_MAX_CHARS;
  if (capture === null || typeof capture !== 'object') {
    throw new ConfigurationError(field, 'must be a boolean or { maxChars }');
  }
  const max = capture.maxChars ?? DEFAULT_MAX_CHARS;
  if (!Number.isSafeInteger(max) || max < 1) {
    throw new ConfigurationError(`${field}.maxChars`, `must be a positive integer (got ${String(max)})`);
  }
  return max;
}

/**
 * The GenAI provider and model of a loopctl model id: `openai:gpt-4o` and `openai-responses:gpt-4o`
 * are `openai` / `gpt-4o`; another `prefix:model` is `prefix` / `model`; an id without a colon
 * (a test model) names both.
 */
export function providerOf(modelId: string): { readonly provider: string; readonly model: string } {
  const colon = modelId.indexOf(':');
  if (colon <= 0 || colon === modelId.length - 1) return { provider: modelId, model: modelId };
  const prefix = modelId.slice(0, colon);
  const model = modelId.slice(colon + 1);
  return { provider: prefix === 'openai-responses' ? 'openai' : prefix, model };
}
