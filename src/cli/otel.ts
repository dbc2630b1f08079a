import type { RunTelemetry } from '../engine/telemetry.js';
import { UsageError } from './args.js';

/** What `--otel` needs beside loopctl, pinned as the project tests them. */
export const OTEL_PACKAGES: readonly string[] = [
  '@opentelemetry/api@1.9.0',
  '@opentelemetry/sdk-trace-base@2.12.1',
  '@opentelemetry/exporter-trace-otlp-http@0.223.1',
  '@opentelemetry/resources@2.12.1',
];

/** How `--otel` loads a module (`import()`; a test gives its own). */
export type LoadModule = (specifier: string) => Promise<unknown>;

/** The CLI's telemetry: the run option, and the flush of what is left to export before the process exits. */
export interface CliTelemetry {
  readonly telemetry: RunTelemetry;
  shutdown(): Promise<void>;
}

type Sdk = typeof import('@opentelemetry/sdk-trace-base');
type Exporter = typeof import('@opentelemetry/exporter-trace-otlp-http');
type Resources = typeof import('@opentelemetry/resources');
type Otel = typeof import('../otel/index.js');

/**
 * `--otel` (docs/telemetry.md, "The CLI"): spans of every run go through a batching processor to
 * the official OTLP/HTTP exporter, which reads the standard variables itself
 * (`OTEL_EXPORTER_OTLP_ENDPOINT`, `…_TRACES_ENDPOINT`, `…_HEADERS`, `…_TIMEOUT`, `…_COMPRESSION`);
 * the provider honours `OTEL_TRACES_SAMPLER`, `OTEL_BSP_*` and the span limits, the resource
 * `OTEL_SERVICE_NAME` (default `loopctl`) and `OTEL_RESOURCE_ATTRIBUTES`. The SDK and the exporter
 * are optional peer dependencies, loaded only here.
 * @throws UsageError (exit 2) with the `npm install` command when one of them is not installed.
 */
export async function startCliTelemetry(version: string, load: LoadModule = (s) => import(s)): Promise<CliTelemetry> {
  let sdk: Sdk, exporter: Exporter, resources: Resources, otel: Otel;
  try {
    [sdk, exporter, resources, otel] = (await Promise.all([
      load('@opentelemetry/sdk-trace-base'),
      load('@opentelemetry/exporter-trace-otlp-http'),
      load('@opentelemetry/resources'),
      load('../otel/index.js'), // loads @opentelemetry/api
    ])) as [Sdk, Exporter, Resources, Otel];
  } catch (error) {
    if (!isModuleNotFound(error)) throw error;
    throw new UsageError(
      `--otel needs the OpenTelemetry SDK and its OTLP exporter, which are not installed; install them with: ` +
        `npm install ${OTEL_PACKAGES.join(' ')}`,
    );
  }
  const { defaultResource, detectResources, envDetector, resourceFromAttributes } = resources;
  const resource = defaultResource()
    .merge(resourceFromAttributes({ 'service.name': 'loopctl', 'service.version': version }))
    .merge(detectResources({ detectors: [envDetector] }));
  const processor = new sdk.BatchSpanProcessor(new exporter.OTLPTraceExporter());
  const tracerProvider = new sdk.BasicTracerProvider({ resource, spanProcessors: [processor] });
  return {
    telemetry: otel.withTelemetry({ tracerProvider }),
    shutdown: () => tracerProvider.shutdown(),
  };
}

function isModuleNotFound(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND';
}
