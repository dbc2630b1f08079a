import { describe, expect, it } from 'vitest';
import { CancelSignal, defineAgent, mcpTools, run } from '../src/index.js';
import { gate, scriptedModel } from '../src/testing/index.js';
import { fixtureTool, settle, startFixture } from './mcp-server-fixture.js';

/**
 * Guarantee 11 across the tree: a parent cancel while its sub-run waits on an
 * MCP call starts every cleanup synchronously, inner to outer, once each,
 * before the parent's terminal event: the MCP cancellation, the sub-run's
 * end, then the parent's.
 */
describe('sub-agent with an MCP tool, parent cancel', () => {
  it('notifications/cancelled, then the child run, then the parent, before the parent terminal event', async () => {
    const entered = gate();
    const f = await startFixture([fixtureTool('never', () => (entered.open(), new Promise(() => {})))]);
    const log: string[] = [];
    const child = defineAgent({
      name: 'child',
      instructions: '',
      tools: await mcpTools(f.client, { prefix: 'mcp_' }),
      model: scriptedModel([{ toolCalls: [{ name: 'mcp_never' }] }]),
      hooks: {
        runEnded: ({ outcome }) =>
          void log.push(`child ${outcome.type} (cancellations sent: ${f.cancellations().length})`),
      },
    });
    const parent = defineAgent({
      name: 'parent',
      instructions: '',
      tools: [child.asTool({ name: 'delegate', description: '' })],
      model: scriptedModel([{ toolCalls: [{ name: 'delegate', arguments: { input: 'x' } }] }]),
      hooks: { runEnded: ({ outcome }) => void log.push(`parent ${outcome.type}`) },
    });
    const T = new CancelSignal();
    run(parent, 'go', { cancel: T }).subscribe((e) => {
      if (e.type === 'run_cancelled') log.push('parent terminal event');
    });
    await entered.promise;
    T.cancel('stop');
    expect(log).toEqual([
      'child run_cancelled (cancellations sent: 1)',
      'parent run_cancelled',
      'parent terminal event',
    ]);
    expect(f.cancellations()).toEqual([{ requestId: f.callIds()[0], reason: 'cancelled: stop' }]);
    expect(f.pending()).toEqual({ responseHandlers: 0, progressHandlers: 0, timeouts: 0 });
    await settle();
    expect(f.serverAborted).toEqual([f.callIds()[0]]);
    await f.client.close();
  });
});
