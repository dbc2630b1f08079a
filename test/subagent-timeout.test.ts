import { describe, expect, it } from 'vitest';
import { defineAgent, run, tool, type RunEvent } from '../src/index.js';
import { collectEvents, scriptedModel } from '../src/testing/index.js';

const U = (n: number) => ({ inputTokens: n, outputTokens: n, totalTokens: 2 * n });

describe('a sub-run stopped by its tool call deadline', () => {
  it('is cancelled on its own token: its usage is summed and its run_cancelled is relayed; the parent goes on', async () => {
    const never = tool({
      name: 'never',
      description: '',
      parameters: { type: 'object', properties: {} },
      execute: () => new Promise<string>(() => {}),
    });
    const child = defineAgent({
      name: 'child',
      instructions: '',
      tools: [never],
      model: scriptedModel([{ toolCalls: [{ name: 'never' }], usage: U(100) }]),
    });
    const parent = defineAgent({
      name: 'parent',
      instructions: '',
      tools: [child.asTool({ name: 'ask', description: 'asks the child', timeoutMs: 30 })],
      model: scriptedModel([
        { toolCalls: [{ name: 'ask', arguments: { input: 'q' } }], usage: U(1) },
        { text: 'done', usage: U(1) },
      ]),
    });
    const events = await collectEvents(run(parent, 'go'));
    expect(events.at(-1)).toMatchObject({ type: 'run_completed', output: 'done', usage: U(102) });
    const relayed = events
      .filter((e): e is Extract<RunEvent, { type: 'subrun_event' }> => e.type === 'subrun_event')
      .map((e) => e.event);
    expect(relayed.at(-1)).toMatchObject({
      type: 'run_cancelled',
      reason: { type: 'abandoned' },
      phase: 'tool_call',
      usage: U(100),
    });
    expect(events.find((e) => e.type === 'tool_call_failed')).toMatchObject({
      name: 'ask',
      error: { name: 'TimeoutError' },
    });
  });
});
