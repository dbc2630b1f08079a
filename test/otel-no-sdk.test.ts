/**
 * loopctl/otel with no SDK registered (docs/telemetry.md, "Cost"): every OpenTelemetry API object
 * it reaches (the global tracer and meter providers, their tracers, spans, meters and instruments,
 * and the context manager) is a counting proxy over the API's no-op, so a test sees each call. A
 * run of 2n streamed chunks makes exactly as many calls as a run of n: none per `text_delta`.
 */
import {
  INVALID_SPAN_CONTEXT,
  ROOT_CONTEXT,
  context,
  isSpanContextValid,
  metrics,
  trace,
  type Context,
  type ContextManager,
  type Span,
  type SpanOptions,
  type Tracer,
  type TracerProvider,
} from '@opentelemetry/api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineAgent, run, tool } from '../src/index.js';
import { withTelemetry } from '../src/otel/index.js';
import { collectEvents, scriptedModel } from '../src/testing/index.js';

const calls = new Map<string, number>();
const count = (name: string) => calls.set(name, (calls.get(name) ?? 0) + 1);
const total = () => [...calls.values()].reduce((a, b) => a + b, 0);

/** `target` with every method call counted under `label.method`, and what it returns proxied too. */
function counting<T extends object>(target: T, label: string): T {
  return new Proxy(target, {
    get(t, key, receiver) {
      const value = Reflect.get(t, key, receiver) as unknown;
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        count(`${label}.${String(key)}`);
        const out = (value as (...a: unknown[]) => unknown).apply(t, args);
        return out !== null && typeof out === 'object' ? counting(out as object, `${label}.${String(key)}()`) : out;
      };
    },
  });
}

class CountingContextManager implements ContextManager {
  active(): Context {
    count('context.active');
    return ROOT_CONTEXT;
  }
  with<A extends unknown[], F extends (...args: A) => ReturnType<F>>(
    _c: Context,
    fn: F,
    thisArg?: ThisParameterType<F>,
    ...args: A
  ): ReturnType<F> {
    count('context.with');
    return fn.call(thisArg, ...args);
  }
  bind<T>(_c: Context, target: T): T {
    count('context.bind');
    return target;
  }
  enable(): this {
    return this;
  }
  disable(): this {
    return this;
  }
}

/** What the API does with no SDK: a non-recording span carrying the parent's context (the API's no-op tracer). */
const noopTracer: Tracer = {
  startSpan(_name: string, _options?: SpanOptions, ctx?: Context): Span {
    const parent = ctx === undefined ? undefined : trace.getSpanContext(ctx);
    return trace.wrapSpanContext(parent !== undefined && isSpanContextValid(parent) ? parent : INVALID_SPAN_CONTEXT);
  },
  startActiveSpan: (() => {
    throw new Error('not used by loopctl');
  }) as Tracer['startActiveSpan'],
};
const noopProvider: TracerProvider = { getTracer: () => noopTracer };

beforeAll(() => {
  trace.setGlobalTracerProvider(counting(noopProvider, 'tracerProvider'));
  metrics.setGlobalMeterProvider(counting(metrics.getMeterProvider(), 'meterProvider'));
  context.setGlobalContextManager(new CountingContextManager());
});
afterAll(() => {
  trace.disable();
  metrics.disable();
  context.disable();
});

const echo = tool({ name: 'echo', description: 'echo', parameters: z.object({}), execute: () => 'ok' });

/** OpenTelemetry calls made by one run whose answer streams `chunks` text deltas, after one tool call. */
async function callsFor(chunks: number): Promise<{ calls: number; deltas: number }> {
  const telemetry = withTelemetry();
  const model = scriptedModel([{ toolCalls: [{ name: 'echo' }] }, { text: Array.from({ length: chunks }, () => 'x') }]);
  const agent = defineAgent({ name: 'n', instructions: '', model, tools: [echo] });
  calls.clear();
  const events = await collectEvents(run(agent, 'go', { telemetry }));
  return { calls: total(), deltas: events.filter((e) => e.type === 'text_delta').length };
}

describe('no SDK registered: the API reached through counting proxies', () => {
  it('zero OpenTelemetry calls per text_delta: 2 000 chunks cost what 10 do', async () => {
    const small = await callsFor(10);
    const large = await callsFor(2000);
    expect(small.deltas).toBe(10);
    expect(large.deltas).toBe(2000);
    expect(large.calls).toBe(small.calls);
    expect(small.calls).toBeGreaterThan(10); // the proxies do see the run's spans and metrics
    expect(calls.get('tracerProvider.getTracer().startSpan')).toBe(4); // invoke_agent, chat, execute_tool, chat
    expect(calls.get('tracerProvider.getTracer().startSpan().end')).toBe(4);
    expect(calls.get('context.with')).toBe(4); // the run's start, each model request, the tool
  });
});
