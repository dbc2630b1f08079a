import { metrics, type Counter, type Histogram, type MeterProvider } from '@opentelemetry/api';
import {
  METRIC_GEN_AI_CLIENT_OPERATION_DURATION,
  METRIC_GEN_AI_CLIENT_TOKEN_USAGE,
  METRIC_LOOPCTL_CANCEL_DURATION,
  METRIC_LOOPCTL_RUNS_ENDED,
} from './semconv.js';

/** The bucket boundaries the GenAI conventions advise for `gen_ai.client.operation.duration`, in s. */
const DURATION_BUCKETS = [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92];
/** The bucket boundaries the GenAI conventions advise for `gen_ai.client.token.usage`, in tokens. */
const TOKEN_BUCKETS = [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864];
/** Cancel to terminal event is synchronous cleanup (guarantee 3): microseconds to milliseconds, in s. */
const CANCEL_BUCKETS = [0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.05, 0.25];

/** The instruments loopctl/otel records (docs/telemetry.md, "Metrics"). */
export interface Instruments {
  readonly operationDuration: Histogram;
  readonly tokenUsage: Histogram;
  readonly cancelDuration: Histogram;
  readonly runsEnded: Counter;
}

/**
 * The instruments of `provider` (the global one when undefined), made once per provider: the global
 * one is looked up at each run, so a provider registered after `withTelemetry()` is used from then on.
 */
export class InstrumentCache {
  #provider: MeterProvider | undefined;
  #instruments: Instruments | undefined;

  constructor(private readonly fixed: MeterProvider | undefined) {}

  get(): Instruments {
    const provider = this.fixed ?? metrics.getMeterProvider();
    if (this.#instruments !== undefined && this.#provider === provider) return this.#instruments;
    const meter = provider.getMeter('loopctl');
    this.#provider = provider;
    return (this.#instruments = {
      operationDuration: meter.createHistogram(METRIC_GEN_AI_CLIENT_OPERATION_DURATION, {
        description: 'GenAI operation duration',
        unit: 's',
        advice: { explicitBucketBoundaries: DURATION_BUCKETS },
      }),
      tokenUsage: meter.createHistogram(METRIC_GEN_AI_CLIENT_TOKEN_USAGE, {
        description: 'Number of input and output tokens used',
        unit: '{token}',
        advice: { explicitBucketBoundaries: TOKEN_BUCKETS },
      }),
      cancelDuration: meter.createHistogram(METRIC_LOOPCTL_CANCEL_DURATION, {
        description: 'From the moment a run saw its cancel to its run_cancelled event',
        unit: 's',
        advice: { explicitBucketBoundaries: CANCEL_BUCKETS },
      }),
      runsEnded: meter.createCounter(METRIC_LOOPCTL_RUNS_ENDED, {
        description: 'Runs ended, by stop reason',
        unit: '{run}',
      }),
    });
  }
}
