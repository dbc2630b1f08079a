import { McpError, ErrorCode } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { CancelSignal, defineAgent, mcpTools, run, type RunEvent } from '../src/index.js';
import { collectEvents, gate, scriptedModel, type Gate } from '../src/testing/index.js';
import { abortListeners, fixtureTool, settle, startFixture, type Fixture } from './mcp-server-fixture.js';
import { trackUnhandledRejections } from './support/unhandled.js';

/**
 * mcpTools against an in-process MCP server (the SDK's low-level Server over
 * InMemoryTransport): listing, results and errors, progress, and cancellation
 * (checkpoint 8: tool call; guarantee 10: in-flight requests aborted;
 * guarantee 11: cleanup starts inner to outer; guarantee 9: nothing left behind).
 */
const unhandled = trackUnhandledRejections();

let entered: Gate = gate();
const text = (t: string) => ({ content: [{ type: 'text' as const, text: t }] });
const serverTools = [
  fixtureTool('echo', (a) => text(`echo: ${String(a['message'])}`), {
    inputSchema: { type: 'object', properties: { message: { type: 'string' } }, required: ['message'] },
  }),
  fixtureTool('never', () => {
    entered.open();
    return new Promise(() => {});
  }),
  fixtureTool('fails', () => ({ isError: true, content: [{ type: 'text', text: 'disk full' }] })),
  fixtureTool('throws', () => {
    throw new McpError(ErrorCode.InvalidParams, 'bad input');
  }),
  fixtureTool('progress', async (_a, x) => {
    await x.progress(1, 2);
    await x.progress(2, 2);
    return text('progressed');
  }),
  fixtureTool('mixed', () => ({
    content: [
      { type: 'text', text: 'a' },
      { type: 'image', data: 'AAAA', mimeType: 'image/png' },
      { type: 'text', text: 'b' },
    ],
  })),
];

function agentWith(
  f: Fixture,
  tools: Awaited<ReturnType<typeof mcpTools>>,
  steps: Parameters<typeof scriptedModel>[0],
) {
  const model = scriptedModel(steps);
  return { model, agent: defineAgent({ name: 'mcp', instructions: '', model, tools }) };
}

describe('mcpTools: listing', () => {
  it('lists every page, keeps the raw JSON Schema, makes names provider-valid and unique, with prefix, include and filter', async () => {
    const f = await startFixture(
      [
        fixtureTool('a.b', () => text('')),
        fixtureTool('a/b', () => text('')),
        fixtureTool('x'.repeat(70), () => text('')),
        fixtureTool('ok-name_1', () => text(''), {
          inputSchema: { type: 'object', properties: { n: { type: 'number' } }, required: ['n'] },
        }),
        fixtureTool('tasky', () => text(''), { execution: { taskSupport: 'required' } }),
      ],
      2,
    );
    const tools = await mcpTools(f.client);
    expect(tools.map((t) => t.name)).toEqual(['a_b', 'a_b_2', 'x'.repeat(64), 'ok-name_1']);
    expect(tools[3]!.parameters).toEqual({ type: 'object', properties: { n: { type: 'number' } }, required: ['n'] });
    expect(tools[3]!.description).toBe('the ok-name_1 tool');
    const prefixed = await mcpTools(f.client, { prefix: 'srv.', include: ['a.b', 'x'.repeat(70)] });
    expect(prefixed.map((t) => t.name)).toEqual(['srv_a_b', `srv_${'x'.repeat(60)}`]);
    const filtered = await mcpTools(f.client, { filter: (info) => info.name.startsWith('ok') });
    expect(filtered.map((t) => t.name)).toEqual(['ok-name_1']);
    await f.client.close();
  });
});

describe('mcpTools: calls in a run', () => {
  it('a call completes with its text; non-text content is summarised as JSON; progress becomes tool_call_progress', async () => {
    const f = await startFixture(serverTools);
    const { agent, model } = agentWith(f, await mcpTools(f.client), [
      { toolCalls: [{ name: 'echo', arguments: { message: 'hi' } }, { name: 'mixed' }, { name: 'progress' }] },
      'done',
    ]);
    const events = await collectEvents(run(agent, 'go'));
    expect(events.at(-1)).toMatchObject({ type: 'run_completed', output: 'done' });
    const outputs = events.flatMap((e) => (e.type === 'tool_call_completed' ? [[e.name, e.output]] : []));
    expect(outputs).toEqual([
      ['echo', 'echo: hi'],
      ['mixed', `a\n${JSON.stringify({ type: 'image', mimeType: 'image/png', bytes: 3 })}\nb`],
      ['progress', 'progressed'],
    ]);
    expect(
      events.filter((e) => e.type === 'tool_call_progress').map((e) => (e as { progress: unknown }).progress),
    ).toEqual([
      { progress: 1, total: 2 },
      { progress: 2, total: 2 },
    ]);
    expect(
      model.requests[1]!.items.filter((i) => i.type === 'tool_result').map(
        (i) => i.type === 'tool_result' && i.isError,
      ),
    ).toEqual([false, false, false]);
    expect(f.cancellations()).toEqual([]);
    expect(f.pending()).toEqual({ responseHandlers: 0, progressHandlers: 0, timeouts: 0 });
    await f.client.close();
  });

  it('isError results and server errors become tool errors with the server text; the run goes on', async () => {
    const f = await startFixture(serverTools);
    const { agent, model } = agentWith(f, await mcpTools(f.client), [
      { toolCalls: [{ name: 'fails' }, { name: 'throws' }] },
      'done',
    ]);
    const events = await collectEvents(run(agent, 'go'));
    expect(events.at(-1)).toMatchObject({ type: 'run_completed', output: 'done' });
    const results = model.requests[1]!.items.filter((i) => i.type === 'tool_result');
    expect(results).toEqual([
      { type: 'tool_result', callId: 'call_1_1', output: 'Error: disk full', isError: true },
      {
        type: 'tool_result',
        callId: 'call_1_2',
        output: 'Error: the MCP server failed the call to "throws": MCP error -32602: bad input',
        isError: true,
      },
    ]);
    expect(f.pending()).toEqual({ responseHandlers: 0, progressHandlers: 0, timeouts: 0 });
    await f.client.close();
  });
});

describe('mcpTools: cancellation (guarantee 10, row 8)', () => {
  it('a cancel mid-call lands before cancel() returns and sends notifications/cancelled first; 20 runs on one client leave nothing behind', async () => {
    const f = await startFixture(serverTools);
    const tools = await mcpTools(f.client);
    const T = new CancelSignal();
    const caller = new AbortController();
    const listenersBefore = abortListeners(caller.signal);
    for (let i = 0; i < 20; i++) {
      entered = gate();
      const { agent, model } = agentWith(f, tools, [{ toolCalls: [{ name: 'never' }] }, 'must not happen']);
      const events: RunEvent[] = [];
      let cancellationsAtTerminal = -1;
      let closed = false;
      run(agent, 'go', { cancel: T, signal: caller.signal }).subscribe({
        next: (e) => {
          events.push(e);
          if (e.type === 'run_cancelled') cancellationsAtTerminal = f.cancellations().length;
        },
        complete: () => (closed = true),
      });
      await entered.promise;
      T.cancel(`stop ${i}`);
      expect(closed).toBe(true); // run_cancelled delivered before cancel() returned
      expect(events.at(-1)).toMatchObject({ type: 'run_cancelled', reason: `stop ${i}`, phase: 'tool_call' });
      const callId = f.callIds().at(-1)!;
      expect(f.cancellations().at(-1)).toEqual({ requestId: callId, reason: `cancelled: stop ${i}` });
      expect(cancellationsAtTerminal).toBe(i + 1); // sent before the terminal event (guarantee 11)
      expect(model.requests).toHaveLength(1);
      await settle();
      expect(f.serverAborted.at(-1)).toBe(callId); // the server's handler saw the cancellation
      expect(f.pending()).toEqual({ responseHandlers: 0, progressHandlers: 0, timeouts: 0 });
    }
    await settle();
    expect(f.cancellations()).toHaveLength(20);
    expect(f.serverAborted).toHaveLength(20);
    expect(abortListeners(caller.signal)).toBe(listenersBefore);
    expect(f.pending()).toEqual({ responseHandlers: 0, progressHandlers: 0, timeouts: 0 });
    // The client still works.
    const { agent } = agentWith(f, tools, [{ toolCalls: [{ name: 'echo', arguments: { message: 'again' } }] }, 'done']);
    const events = await collectEvents(run(agent, 'go'));
    expect(events.find((e) => e.type === 'tool_call_completed')).toMatchObject({ output: 'echo: again' });
    expect(unhandled).toEqual([]);
    await f.client.close();
  });

  it('a per-call timeout sends exactly one cancellation and becomes a tool error; completed calls send none', async () => {
    const f = await startFixture(serverTools);
    const { agent, model } = agentWith(f, await mcpTools(f.client, { timeoutMs: 20 }), [
      { toolCalls: [{ name: 'echo', arguments: { message: 'x' } }] },
      { toolCalls: [{ name: 'never' }] },
      { toolCalls: [{ name: 'echo', arguments: { message: 'y' } }] },
      'done',
    ]);
    const events = await collectEvents(run(agent, 'go'));
    expect(events.at(-1)).toMatchObject({ type: 'run_completed', output: 'done' });
    const ids = f.callIds();
    expect(ids).toHaveLength(3);
    expect(f.cancellations()).toEqual([{ requestId: ids[1], reason: expect.stringContaining('Request timed out') }]);
    expect(model.requests[2]!.items.at(-1)).toMatchObject({
      type: 'tool_result',
      isError: true,
      output: expect.stringContaining('timed out after 20 ms'),
    });
    await settle();
    expect(f.cancellations()).toHaveLength(1);
    expect(f.pending()).toEqual({ responseHandlers: 0, progressHandlers: 0, timeouts: 0 });
    expect(unhandled).toEqual([]);
    await f.client.close();
  });

  it('unsubscribing mid-call cancels the MCP call the same way', async () => {
    const f = await startFixture(serverTools);
    entered = gate();
    const { agent } = agentWith(f, await mcpTools(f.client), [{ toolCalls: [{ name: 'never' }] }]);
    const sub = run(agent, 'go').subscribe();
    await entered.promise;
    sub.unsubscribe();
    expect(f.cancellations()).toEqual([{ requestId: f.callIds()[0], reason: expect.stringContaining('unsubscribed') }]);
    expect(f.pending()).toEqual({ responseHandlers: 0, progressHandlers: 0, timeouts: 0 });
    await f.client.close();
  });
});

describe('mcpTools: transport failures', () => {
  it('a server that closes mid-call gives a clear tool error, later calls fail fast, and the run completes', async () => {
    entered = gate();
    const f = await startFixture(serverTools);
    const { agent, model } = agentWith(f, await mcpTools(f.client), [
      { toolCalls: [{ name: 'never' }] },
      { toolCalls: [{ name: 'echo', arguments: { message: 'late' } }] },
      'done',
    ]);
    void entered.promise.then(() => f.server.close());
    const events = await collectEvents(run(agent, 'go'));
    expect(events.at(-1)).toMatchObject({ type: 'run_completed', output: 'done' });
    expect(model.requests[1]!.items.at(-1)).toMatchObject({
      isError: true,
      output: 'Error: the MCP server closed the connection during the call to "never"',
    });
    expect(model.requests[2]!.items.at(-1)).toMatchObject({
      isError: true,
      output: expect.stringContaining('MCP server is not connected'),
    });
    expect(f.callIds()).toHaveLength(1); // the later call never reached the transport
    expect(f.client.transport).toBeUndefined();
    expect(f.pending()).toEqual({ responseHandlers: 0, progressHandlers: 0, timeouts: 0 });
    expect(unhandled).toEqual([]);
  });

  it('a failed send becomes a tool error, no response handler left (guarantee 9: nothing left behind)', async () => {
    const f = await startFixture(serverTools);
    f.failSends((m) => 'method' in m && m.method === 'tools/call');
    const { agent, model } = agentWith(f, await mcpTools(f.client), [
      { toolCalls: [{ name: 'echo', arguments: { message: 'x' } }] },
      'done',
    ]);
    const events = await collectEvents(run(agent, 'go'));
    expect(events.at(-1)).toMatchObject({ type: 'run_completed' });
    expect(model.requests[1]!.items.at(-1)).toMatchObject({
      isError: true,
      output: 'Error: the MCP call to "echo" failed: simulated transport failure',
    });
    await settle();
    expect(f.pending()).toEqual({ responseHandlers: 0, progressHandlers: 0, timeouts: 0 });
    expect(unhandled).toEqual([]);
    await f.client.close();
  });
});
