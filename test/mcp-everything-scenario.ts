import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { expect } from 'vitest';
import { CancelSignal, defineAgent, mcpTools, run, type RunEvent } from '../src/index.js';
import { collectEvents, gate, scriptedModel } from '../src/testing/index.js';
import { cancellationsIn, pendingOf, recordSends } from './mcp-server-fixture.js';

/** The real server-everything's entry point (its package `bin`). */
export const EVERYTHING_BIN = new URL(
  '../node_modules/@modelcontextprotocol/server-everything/dist/index.js',
  import.meta.url,
).pathname;

/**
 * The scenario both server-everything tests run on a connected client:
 * list its tools, call `echo` in a whole run, start
 * `trigger-long-running-operation` and cancel it once progress arrived, then
 * call again on the same client.
 */
export async function everythingScenario(client: Client): Promise<void> {
  const sent: JSONRPCMessage[] = [];
  recordSends(client.transport!, sent);
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown): void => void unhandled.push(reason);
  process.on('unhandledRejection', onUnhandled);
  try {
    const tools = await mcpTools(client, { prefix: 'ev_' });
    const names = tools.map((t) => t.name);
    expect(names).toContain('ev_echo');
    expect(names).toContain('ev_trigger-long-running-operation');
    expect(tools.find((t) => t.name === 'ev_echo')!.parameters).toMatchObject({
      type: 'object',
      properties: { message: { type: 'string' } },
    });

    // A quick call through a whole run.
    const quick = scriptedModel([{ toolCalls: [{ name: 'ev_echo', arguments: { message: 'hello' } }] }, 'done']);
    const events1 = await collectEvents(run(defineAgent({ name: 'ev', instructions: '', model: quick, tools }), 'go'));
    expect(events1.at(-1)).toMatchObject({ type: 'run_completed', output: 'done' });
    expect(events1.find((e) => e.type === 'tool_call_completed')).toMatchObject({
      name: 'ev_echo',
      output: 'Echo: hello',
    });

    // The long-running operation, cancelled once progress arrived.
    const progressed = gate();
    const slow = scriptedModel([
      { toolCalls: [{ name: 'ev_trigger-long-running-operation', arguments: { duration: 30, steps: 300 } }] },
      'must not happen',
    ]);
    const T = new CancelSignal();
    const events: RunEvent[] = [];
    let cancellationsAtTerminal = -1;
    let closed = false;
    run(defineAgent({ name: 'ev', instructions: '', model: slow, tools }), 'go', { cancel: T }).subscribe({
      next: (e) => {
        events.push(e);
        if (e.type === 'tool_call_progress') progressed.open();
        if (e.type === 'run_cancelled') cancellationsAtTerminal = cancellationsIn(sent).length;
      },
      complete: () => (closed = true),
    });
    await progressed.promise;
    T.cancel('user clicked stop');
    expect(closed).toBe(true); // run_cancelled before cancel() returned
    expect(events.at(-1)).toMatchObject({ type: 'run_cancelled', reason: 'user clicked stop', phase: 'tool_call' });
    const progress = events.filter((e) => e.type === 'tool_call_progress');
    expect(progress.length).toBeGreaterThanOrEqual(1);
    expect(progress[0]).toMatchObject({
      name: 'ev_trigger-long-running-operation',
      progress: { progress: 1, total: 300 },
    });
    const longCall = sent.filter((m) => 'method' in m && m.method === 'tools/call' && 'id' in m).at(-1) as {
      id: number;
    };
    expect(cancellationsIn(sent)).toEqual([{ requestId: longCall.id, reason: 'cancelled: user clicked stop' }]);
    expect(cancellationsAtTerminal).toBe(1); // sent before the terminal event (guarantee 11)
    expect(slow.requests).toHaveLength(1);
    expect(pendingOf(client)).toEqual({ responseHandlers: 0, progressHandlers: 0, timeouts: 0 });

    // The same client still works.
    const again = scriptedModel([{ toolCalls: [{ name: 'ev_echo', arguments: { message: 'again' } }] }, 'done']);
    const events3 = await collectEvents(run(defineAgent({ name: 'ev', instructions: '', model: again, tools }), 'go'));
    expect(events3.find((e) => e.type === 'tool_call_completed')).toMatchObject({ output: 'Echo: again' });
    expect(events3.at(-1)).toMatchObject({ type: 'run_completed' });
    expect(pendingOf(client)).toEqual({ responseHandlers: 0, progressHandlers: 0, timeouts: 0 });
    expect(unhandled).toEqual([]);
  } finally {
    process.off('unhandledRejection', onUnhandled);
  }
}
