/**
 * Trace context across the queue (docs/telemetry.md, "Context"; docs/scale-out.md): a start's W3C trace context
 * rides in the BullMQ job, and the worker's run (`runOptions: { telemetry }`) joins the caller's trace: its
 * `invoke_agent` span has the request's trace id and the caller's span as parent. Real Redis, a real worker
 * (in process, with an in-memory exporter), through the HTTP handler and through `queueRuns.start`.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { ConfigurationError } from '../../src/index.js';
import { startWorker, type QueueWorker } from '../../src/bullmq/index.js';
import { createHandler } from '../../src/http/index.js';
import { instrumentRuns } from '../../src/otel/index.js';
import { bearer, listen, type Listening } from '../support/http.js';
import { otelHarness } from '../support/otel.js';
import { queueAgent } from './support/queue-agent.js';
import { allEvents, QUEUE_SECRET, queueFixture, sleep, type QueueFixture } from './support/queue.js';

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const CALLER = '00f067aa0ba902b7';
const P = 'alice';

let fx: QueueFixture | undefined;
let worker: QueueWorker | undefined;
let server: Listening | undefined;
afterEach(async () => {
  await server?.close();
  await worker?.close();
  await fx?.cleanup();
  server = worker = fx = undefined;
});

/** A queue of its own with an in-process worker whose runs record spans into `h`. */
async function setUp() {
  const h = otelHarness();
  fx = queueFixture();
  worker = await startWorker({
    connection: fx.url,
    queue: fx.queue,
    prefix: fx.prefix,
    secret: QUEUE_SECRET,
    agents: { 'queue-agent': queueAgent },
    runOptions: { telemetry: h.telemetry },
  });
  return { h, fx };
}

/** The worker's `invoke_agent` span of the run, once it ended (its terminal event is stored after it). */
async function invokeSpan(h: ReturnType<typeof otelHarness>, runId: string): Promise<ReadableSpan> {
  for (let i = 0; i < 200; i++) {
    const span = h
      .finished()
      .find((s) => s.name === 'invoke_agent queue-agent' && s.attributes['loopctl.run.id'] === runId);
    if (span) return span;
    await sleep(25);
  }
  throw new Error(`no invoke_agent span for ${runId}`);
}

const body = (text: string) =>
  JSON.stringify({
    threadId: 't1',
    runId: 'client-run',
    messages: [{ id: 'u1', role: 'user', content: text }],
    tools: [],
    context: [],
    state: {},
    forwardedProps: {},
  });

async function post(url: string, headers: Record<string, string>) {
  const res = await fetch(`${url}/agents/queue-agent/runs`, {
    method: 'POST',
    body: body('hi'),
    headers: { authorization: `Bearer ${P}`, 'content-type': 'application/json', ...headers },
  });
  return { status: res.status, runId: res.headers.get('loopctl-run-id'), text: await res.text() };
}

describe("queueRuns: the worker's run joins the caller's trace", () => {
  it("POST with a traceparent: the worker's invoke_agent is the caller span's child, in its trace", async () => {
    const { h, fx } = await setUp();
    server = await listen(createHandler({ runs: fx.runs, authorize: bearer }));
    const res = await post(server.url, { traceparent: `00-${TRACE}-${CALLER}-01`, tracestate: 'vendor=1' });
    expect(res.status).toBe(200);
    expect(res.text).toContain('RUN_FINISHED');
    const span = await invokeSpan(h, res.runId!);
    expect(span.spanContext().traceId).toBe(TRACE);
    expect(span.parentSpanContext).toMatchObject({ traceId: TRACE, spanId: CALLER, isRemote: true });
    expect(span.spanContext().traceState?.get('vendor')).toBe('1');
    // The run's own spans stay under it, in the same trace.
    const chat = h.finished().filter((s) => s.parentSpanContext?.spanId === span.spanContext().spanId);
    expect(chat.map((s) => [s.name, s.spanContext().traceId])).toEqual([['chat directive', TRACE]]);
  }, 60_000);

  it("POST without a traceparent (or with an invalid one): the worker's run is a root span", async () => {
    const { h, fx } = await setUp();
    server = await listen(createHandler({ runs: fx.runs, authorize: bearer }));
    const plain = await post(server.url, {});
    expect(plain.text).toContain('RUN_FINISHED');
    const root = await invokeSpan(h, plain.runId!);
    expect(root.parentSpanContext).toBeUndefined();
    expect(root.spanContext().traceId).not.toBe(TRACE);
    // Through queueRuns.start: an invalid carrier is ignored whole (W3C), the run still runs.
    const { runId } = await fx.runs.start({
      agent: 'queue-agent',
      threadId: 't2',
      input: 'hi',
      principal: P,
      trace: { traceparent: `00-${'0'.repeat(32)}-${CALLER}-01` },
    });
    const events = await allEvents(fx.runs.events(runId, { principal: P }));
    expect(events.at(-1)!.type).toBe('run_completed');
    expect((await invokeSpan(h, runId)).parentSpanContext).toBeUndefined();
  }, 60_000);

  it("instrumentRuns on queueRuns: the worker's run is a child of the API process's runs.start span", async () => {
    const { h, fx } = await setUp();
    const api = otelHarness();
    const runs = instrumentRuns(fx.runs, { tracerProvider: api.tracerProvider });
    // With the caller's traceparent: caller → runs.start (API process) → invoke_agent (worker).
    const traced = await runs.start({
      agent: 'queue-agent',
      threadId: 't1',
      input: 'hi',
      principal: P,
      trace: { traceparent: `00-${TRACE}-${CALLER}-01` },
    });
    const start = api.finished().find((s) => s.name === 'runs.start queue-agent')!;
    expect(start.spanContext().traceId).toBe(TRACE);
    expect(start.parentSpanContext).toMatchObject({ spanId: CALLER, isRemote: true });
    expect(traced.traceparent).toBe(`00-${TRACE}-${start.spanContext().spanId}-01`);
    const child = await invokeSpan(h, traced.runId);
    expect(child.spanContext().traceId).toBe(TRACE);
    expect(child.parentSpanContext).toMatchObject({ spanId: start.spanContext().spanId, isRemote: true });

    // Without one: runs.start is a root of the API process, and the worker's run still its child.
    api.reset();
    const own = await runs.start({ agent: 'queue-agent', threadId: 't2', input: 'hi', principal: P });
    const root = api.finished().find((s) => s.name === 'runs.start queue-agent')!;
    expect(root.parentSpanContext).toBeUndefined();
    const run = await invokeSpan(h, own.runId);
    expect(run.spanContext().traceId).toBe(root.spanContext().traceId);
    expect(run.parentSpanContext?.spanId).toBe(root.spanContext().spanId);
  }, 60_000);

  it("startWorker checks runOptions: telemetry must be a RunTelemetry, trace is the job's", async () => {
    const base = { connection: 'redis://127.0.0.1:6379', queue: 'never-started', agents: {}, insecure: true };
    const bad = [
      [{ ...base, runOptions: 'x' }, 'options.runOptions'],
      [{ ...base, runOptions: { telemetry: {} } }, 'options.runOptions.telemetry'],
      [{ ...base, runOptions: { trace: { traceparent: `00-${TRACE}-${CALLER}-01` } } }, 'options.runOptions.trace'],
    ] as const;
    for (const [options, field] of bad) {
      const started = startWorker(options as never);
      await expect(started).rejects.toBeInstanceOf(ConfigurationError);
      await expect(started).rejects.toMatchObject({ field });
    }
  });
});
