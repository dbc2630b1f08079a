/**
 * "Stop after this step": a graceful stop. A worker shutting down (here, a
 * timer standing in for SIGTERM) asks the run to stop at the end of its turn:
 * both tool calls of the turn finish, no further model request is sent, and the
 * run ends `run_completed` with `stopReason: 'stopped'`, its history saved.
 * `graceMs` bounds the wait: past it the run would be cancelled instead.
 *
 *   npx tsx examples/stop-after-step.ts
 */
import { z } from 'zod';
import { MemorySession, RunControl, defineAgent, run, tool } from 'loopctl';
import { scriptedModel } from 'loopctl/testing';

const migrate = tool({
  name: 'migrate',
  description: 'Migrates one table',
  parameters: z.object({ table: z.string() }),
  execute: ({ table }) => new Promise<string>((resolve) => setTimeout(() => resolve(`migrated ${table}`), 50)),
});

const agent = defineAgent({
  name: 'migrator',
  instructions: 'Migrate the tables you are asked to, a few per step.',
  model: scriptedModel([
    {
      text: 'Migrating users and orders first.',
      toolCalls: [
        { name: 'migrate', arguments: { table: 'users' } },
        { name: 'migrate', arguments: { table: 'orders' } },
      ],
    },
    'never asked: the run stopped after its first step',
  ]),
  tools: [migrate],
  parallelToolCalls: { maxConcurrency: 2 },
});

const control = new RunControl();
const session = new MemorySession();

run(agent, 'Migrate every table', { control, session }).subscribe((event) => {
  if (event.type === 'tool_call_started') {
    // The shutdown signal arrives while the step's calls work.
    setTimeout(() => control.stop({ at: 'turn_end', graceMs: 30_000 }), 10);
  }
  if (event.type === 'stop_requested') console.log(`stop requested at ${event.stopAt}`);
  if (event.type === 'tool_call_completed') console.log(event.output);
  if (event.type === 'run_completed') {
    console.log(`${event.stopReason}: ${event.output}`);
    console.log(`${session.items.length} items saved`);
  }
});
