import type { SpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { RunTelemetry } from '../engine/telemetry.js';
import type { Output } from './output.js';
import {
  bounded,
  checkedTracesEndpoint,
  ExportAccount,
  flushBoundMs,
  lineExporter,
  tracesEndpoint,
  tracesExporters,
} from './otel-export.js';
import { UsageError } from './usage-error.js';

/** What `--otel` needs beside loopctl, pinned as the project tests them. */
export const OTEL_PACKAGES: readonly string[] = [
  '@opentelemetry/api@1.9.0',
  '@opentelemetry/sdk-trace-base@2.12.1',
  '@opentelemetry/exporter-trace-otlp-http@0.223.1',
  '@opentelemetry/resources@2.12.1',
];

/** The specifier of loopctl's OpenTelemetry adapter, as `--otel` asks {@link LoadModule} for it. */
const OWN_ADAPTER = '../otel/index.js';

/** How `--otel` loads a module (`import()`; a test gives its own). */
export type LoadModule = (specifier: string) => Promise<unknown>;

/**
 * The CLI's telemetry: the run option, and the flush of what is left to export before the process
 * exits (bounded: it never rejects, and resolves within `flushBoundMs` ms).
 */
export interface CliTelemetry {
  readonly telemetry: RunTelemetry;
  shutdown(): Promise<void>;
}

type Sdk = typeof import('@opentelemetry/sdk-trace-base');
type Exporter = typeof import('@opentelemetry/exporter-trace-otlp-http');
type Resources = typeof import('@opentelemetry/resources');
type Otel = typeof import('../otel/index.js');

/** Where `--otel` reports: the CLI's stderr, and the environment it reads the OpenTelemetry variables from. */
export interface CliTelemetryIO {
  readonly env: NodeJS.ProcessEnv;
  readonly stderr: Output;
  readonly load?: LoadModule;
}

/**
 * `--otel` (docs/telemetry.md, "The CLI"): spans of every run go to the exporters
 * `OTEL_TRACES_EXPORTER` names (see `tracesExporters`): `otlp` (the default) through a batching
 * processor to the official OTLP/HTTP exporter, which reads the standard variables itself
 * (`OTEL_EXPORTER_OTLP_ENDPOINT`, `…_TRACES_ENDPOINT`, `…_HEADERS`, `…_TIMEOUT`, `…_COMPRESSION`);
 * `console`, each span as one line on stderr as it ends. The provider honours `OTEL_TRACES_SAMPLER`,
 * `OTEL_BSP_*` and the span limits, the resource `OTEL_SERVICE_NAME` (default `loopctl`) and
 * `OTEL_RESOURCE_ATTRIBUTES`. `shutdown()` flushes what is left for at most `flushBoundMs(env)` ms
 * (500 unless an OTLP timeout variable is set); a collector that did not take every span then
 * (it refused, failed or did not answer) is one `loopctl: --otel: …` line on stderr, printed once.
 * The SDK and the exporter are optional peer dependencies, loaded only here.
 * @throws UsageError (exit 2) with the `npm install` command when one of them is not installed,
 *   naming `OTEL_TRACES_EXPORTER` for a value it does not know, and naming the OTLP endpoint variable the
 *   exporter reads when it is not an http(s) URL.
 */
export async function startCliTelemetry(version: string, io: CliTelemetryIO): Promise<CliTelemetry> {
  // loopctl's own adapter by a literal import(), which a bundle of the CLI (dist/bin) takes in, so that it shares the
  // engine's classes; the OpenTelemetry packages by name, from the user's node_modules.
  const { env, stderr, load = (s) => (s === OWN_ADAPTER ? import('../otel/index.js') : import(s)) } = io;
  const exporters = tracesExporters(env);
  const otlp = exporters.has('otlp');
  const endpoint = otlp ? checkedTracesEndpoint(env) : tracesEndpoint(env);
  let sdk: Sdk, exporter: Exporter | undefined, resources: Resources, otel: Otel;
  try {
    [sdk, resources, otel, exporter] = (await Promise.all([
      load('@opentelemetry/sdk-trace-base'),
      load('@opentelemetry/resources'),
      load(OWN_ADAPTER), // loads @opentelemetry/api
      otlp ? load('@opentelemetry/exporter-trace-otlp-http') : undefined,
    ])) as [Sdk, Resources, Otel, Exporter | undefined];
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
  const account = new ExportAccount(endpoint, stderr);
  const spanProcessors: SpanProcessor[] = [];
  if (exporters.has('console')) spanProcessors.push(new sdk.SimpleSpanProcessor(lineExporter(stderr)));
  if (exporter) {
    // Counts the spans that end, so the warning can say how many the collector did not take.
    spanProcessors.push({
      onStart: () => undefined,
      onEnd: () => void account.ended++,
      forceFlush: async () => undefined,
      shutdown: async () => undefined,
    });
    spanProcessors.push(new sdk.BatchSpanProcessor(account.watch(new exporter.OTLPTraceExporter())));
  }
  const tracerProvider = new sdk.BasicTracerProvider({ resource, spanProcessors });
  const boundMs = flushBoundMs(env);
  return {
    telemetry: otel.withTelemetry({ tracerProvider }),
    shutdown: () =>
      bounded(tracerProvider.shutdown(), boundMs, () => account.warn(`did not answer within ${boundMs / 1000} s`)),
  };
}

function isModuleNotFound(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND';
}
