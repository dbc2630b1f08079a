/**
 * Trace context over HTTP (docs/telemetry.md, "Runs and HTTP"): the handler reads the request's
 * `traceparent` / `tracestate` into `Runs.start({ trace })` and writes back the `traceparent` a traced
 * `Runs` answers; `instrumentRuns` starts the run inside the caller's trace, and the run's
 * `invoke_agent` span (telemetry in the run options) is a child of `runs.start`.
 */
import { context, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { defineAgent, localRuns, run, start } from '../src/index.js';
import { createHandler } from '../src/http/index.js';
import { instrumentRuns } from '../src/otel/index.js';
import { parseTraceparent, traceCarrierOf } from '../src/runs/trace-carrier.js';
import { scriptedModel } from '../src/testing/index.js';
import { bearer, listen, type Listening } from './support/http.js';
import { otelHarness } from './support/otel.js';

const manager = new AsyncLocalStorageContextManager();
beforeAll(() => void context.setGlobalContextManager(manager.enable()));
afterAll(() => {
  manager.disable();
  context.disable();
});
let server: Listening | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const CALLER = '00f067aa0ba902b7';
const body = JSON.stringify({
  threadId: 't1',
  runId: 'client-run',
  messages: [{ id: 'u1', role: 'user', content: 'hi' }],
  tools: [],
  context: [],
  state: {},
  forwardedProps: {},
});

async function post(
  url: string,
  headers: Record<string, string>,
): Promise<{ status: number; headers: Headers; text: string }> {
  const res = await fetch(`${url}/agents/helper/runs`, {
    method: 'POST',
    body,
    headers: { authorization: 'Bearer alice', 'content-type': 'application/json', ...headers },
  });
  return { status: res.status, headers: res.headers, text: await res.text() };
}

describe('traceCarrierOf: the W3C traceparent rules', () => {
  it('keeps a valid traceparent (and tracestate, repeated headers joined); ignores anything invalid', () => {
    const valid = `00-${TRACE}-${CALLER}-01`;
    expect(traceCarrierOf(valid, undefined)).toEqual({ traceparent: valid });
    expect(traceCarrierOf(valid, ['a=1', 'b=2'])).toEqual({ traceparent: valid, tracestate: 'a=1,b=2' });
    expect(parseTraceparent(valid)).toEqual({ traceId: TRACE, spanId: CALLER, flags: 1 });
    expect(parseTraceparent(`01-${TRACE}-${CALLER}-00-future`)).toEqual({ traceId: TRACE, spanId: CALLER, flags: 0 });
    for (const bad of [
      `ff-${TRACE}-${CALLER}-01`,
      `00-${'0'.repeat(32)}-${CALLER}-01`,
      `00-${TRACE}-${'0'.repeat(16)}-01`,
      `00-${TRACE}-${CALLER}-01-extra`,
      `00-${TRACE.toUpperCase()}-${CALLER}-01`,
      'garbage',
      undefined,
      ['a', 'b'],
    ]) {
      expect(traceCarrierOf(bad, 'a=1')).toBeUndefined();
    }
  });
});

describe('the HTTP handler and instrumentRuns', () => {
  it("a start joins the caller's trace (under its traceparent); the start's traceparent is written back", async () => {
    const h = otelHarness();
    const agent = defineAgent({ name: 'helper', instructions: '', model: scriptedModel(['hello']) });
    const runs = instrumentRuns(localRuns({ agents: { helper: agent }, runOptions: { telemetry: h.telemetry } }), {
      tracerProvider: h.tracerProvider,
    });
    server = await listen(createHandler({ runs, authorize: bearer }));
    const res = await post(server.url, { traceparent: `00-${TRACE}-${CALLER}-01`, tracestate: 'vendor=1' });
    expect(res.status).toBe(200);
    expect(res.text).toContain('RUN_FINISHED');
    expect(h.shape()).toEqual(['runs.start helper', '  invoke_agent helper', '    chat scripted']);
    const [start] = h.finished().filter((s) => s.name === 'runs.start helper');
    expect(start!.spanContext().traceId).toBe(TRACE);
    expect(start!.parentSpanContext).toMatchObject({ traceId: TRACE, spanId: CALLER, isRemote: true });
    expect(start!.spanContext().traceState?.get('vendor')).toBe('1');
    expect(res.headers.get('traceparent')).toBe(`00-${TRACE}-${start!.spanContext().spanId}-01`);
    const [root] = h.tree();
    expect(root!.attributes).toEqual({
      'gen_ai.agent.name': 'helper',
      'gen_ai.conversation.id': 't1',
      'loopctl.run.id': root!.children![0]!.attributes['loopctl.run.id'],
    });
    expect(new Set(h.finished().map((s) => s.spanContext().traceId))).toEqual(new Set([TRACE]));
  });

  it('a plain Runs ignores the trace context: no traceparent is written back', async () => {
    const agent = defineAgent({ name: 'helper', instructions: '', model: scriptedModel(['hello']) });
    server = await listen(createHandler({ runs: localRuns({ agents: { helper: agent } }), authorize: bearer }));
    const res = await post(server.url, { traceparent: `00-${TRACE}-${CALLER}-01` });
    expect(res.status).toBe(200);
    expect(res.headers.get('traceparent')).toBeNull();
  });

  it('an invalid traceparent is ignored: the start is a new trace', async () => {
    const h = otelHarness();
    const agent = defineAgent({ name: 'helper', instructions: '', model: scriptedModel(['hello']) });
    const runs = instrumentRuns(localRuns({ agents: { helper: agent } }), { tracerProvider: h.tracerProvider });
    server = await listen(createHandler({ runs, authorize: bearer }));
    const res = await post(server.url, { traceparent: `00-${TRACE}-${'0'.repeat(16)}-01` });
    const [start] = h.finished();
    expect(start!.parentSpanContext).toBeUndefined();
    expect(start!.spanContext().traceId).not.toBe(TRACE);
    expect(res.headers.get('traceparent')).toBe(`00-${start!.spanContext().traceId}-${start!.spanContext().spanId}-01`);
  });

  it('cancel, steer, withdraw, stop and cancelToolCall get spans of their own; a rejected operation is an error span', async () => {
    const h = otelHarness();
    const model = scriptedModel([{ text: 'x', delayMs: 60_000 }]);
    const agent = defineAgent({ name: 'helper', instructions: '', model });
    const runs = instrumentRuns(localRuns({ agents: { helper: agent } }), { tracerProvider: h.tracerProvider });
    const { runId } = await runs.start({ agent: 'helper', threadId: 't', input: 'hi', principal: 'p' });
    const { id } = await runs.steer(runId, 'more', 'p');
    expect(await runs.withdraw(runId, id, 'p')).toBe(true);
    expect(await runs.cancel(runId, { by: 'user' }, 'p')).toBe(true);
    expect(await runs.stop(runId, { at: 'turn_end' }, 'p')).toBe(false); // the run has ended
    await expect(runs.stop(runId, { at: 'soon' as never }, 'p')).rejects.toThrow();
    expect(await runs.cancelToolCall(runId, 'call-1', 'late', 'p')).toBe(false);
    expect(h.shape()).toEqual([
      'runs.start helper',
      'runs.steer',
      'runs.withdraw',
      'runs.cancel',
      'runs.stop',
      'runs.stop !ERROR(ConfigurationError)',
      'runs.cancel_tool_call',
    ]);
    const callCancel = h.tree().find((n) => n.name === 'runs.cancel_tool_call')!;
    expect(callCancel.attributes).toEqual({
      'loopctl.run.id': runId,
      'gen_ai.tool.call.id': 'call-1',
      'loopctl.runs.result': false,
    });
    const cancel = h.tree().find((n) => n.name === 'runs.cancel')!;
    expect(cancel.attributes).toEqual({
      'loopctl.run.id': runId,
      'loopctl.cancel.reason': '{"by":"user"}',
      'loopctl.runs.result': true,
    });
  });
});

describe("the trace run option (a run for another process's caller: the queue worker's)", () => {
  const valid = `00-${TRACE}-${CALLER}-01`;
  it("the run's invoke_agent span is the remote caller's child, in its trace; an active span wins", async () => {
    const h = otelHarness();
    const agent = defineAgent({ name: 'helper', instructions: '', model: scriptedModel(['a', 'b']) });
    await start(agent, 'hi', { telemetry: h.telemetry, trace: { traceparent: valid, tracestate: 'vendor=1' } }).result;
    const [span] = h.finished().filter((s) => s.name === 'invoke_agent helper');
    expect(span!.spanContext().traceId).toBe(TRACE);
    expect(span!.parentSpanContext).toMatchObject({ traceId: TRACE, spanId: CALLER, isRemote: true });
    expect(span!.spanContext().traceState?.get('vendor')).toBe('1');
    h.reset();
    const outer = h.tracerProvider.getTracer('test').startSpan('outer');
    await context.with(
      trace.setSpan(context.active(), outer),
      () => start(agent, 'hi', { telemetry: h.telemetry, trace: { traceparent: valid } }).result,
    );
    outer.end();
    const [inner] = h.finished().filter((s) => s.name === 'invoke_agent helper');
    expect(inner!.parentSpanContext?.spanId).toBe(outer.spanContext().spanId);
  });

  it('a bad trace is a ConfigurationError naming the field', () => {
    const agent = defineAgent({ name: 'helper', instructions: '', model: scriptedModel(['a']) });
    const cases = [
      ['x', 'options.trace'],
      [{ traceparent: 'garbage' }, 'options.trace.traceparent'],
      [{ traceparent: `00-${'0'.repeat(32)}-${CALLER}-01` }, 'options.trace.traceparent'],
      [{ traceparent: valid, tracestate: 1 }, 'options.trace.tracestate'],
    ] as const;
    for (const [value, field] of cases) {
      expect(() => run(agent, 'hi', { trace: value as never })).toThrow(expect.objectContaining({ field }));
    }
  });
});
