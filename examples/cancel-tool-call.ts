/**
 * Cancelling one tool call: two searches run in parallel; the slow one is
 * cancelled on its own (a "cancel" button on its card). Its `tool_call_failed`
 * (interrupted, `ToolCallCancelledError`) arrives before `cancelToolCall()`
 * returns, the other search finishes, and the model answers with what it has.
 *
 *   npx tsx examples/cancel-tool-call.ts
 */
import { z } from 'zod';
import { RunControl, defineAgent, run, tool } from 'loopctl';
import { scriptedModel } from 'loopctl/testing';

const search = tool({
  name: 'search',
  description: 'Searches one source',
  parameters: z.object({ source: z.string() }),
  execute: ({ source }, ctx) =>
    new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => resolve(`results from ${source}`), source === 'archive' ? 60_000 : 50);
      ctx.signal.addEventListener('abort', () => (clearTimeout(timer), reject(ctx.signal.reason)), { once: true });
    }),
});

const agent = defineAgent({
  name: 'researcher',
  instructions: 'Search the sources, then answer.',
  model: scriptedModel([
    {
      toolCalls: [
        { name: 'search', callId: 'web', arguments: { source: 'web' } },
        { name: 'search', callId: 'archive', arguments: { source: 'archive' } },
      ],
    },
    'Answered from the web results; the archive search was cancelled.',
  ]),
  tools: [search],
  parallelToolCalls: { maxConcurrency: 2 },
});

const control = new RunControl();

run(agent, 'What changed last week?', { control }).subscribe((event) => {
  if (event.type === 'tool_call_started' && event.callId === 'archive') {
    setTimeout(() => {
      const cancelled = control.cancelToolCall('archive', 'taking too long');
      console.log(`cancelToolCall returned ${cancelled}`);
    }, 10);
  }
  if (event.type === 'tool_call_failed') {
    console.log(`${event.callId}: ${event.error.name}: ${event.error.message} (interrupted: ${event.interrupted})`);
  }
  if (event.type === 'tool_call_completed') console.log(`${event.callId}: ${event.output}`);
  if (event.type === 'run_completed') console.log(`${event.stopReason}: ${event.output}`);
});
