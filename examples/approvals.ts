/**
 * Tool approvals, now or later. A `deploy` tool needs approval: in the first
 * run a person approves it while the run waits; in the second the run
 * suspends instead, its `suspended` value is saved as JSON (a database row, a
 * file) and `resume()` continues it with the decision, here a rejection the
 * model reads.
 *
 *   npx tsx examples/approvals.ts
 */
import { z } from 'zod';
import { MemorySession, RunControl, defineAgent, resume, run, start, tool } from 'loopctl';
import { scriptedModel } from 'loopctl/testing';

const deploy = tool({
  name: 'deploy',
  description: 'Deploys a service to production',
  parameters: z.object({ service: z.string() }),
  needsApproval: true,
  execute: ({ service }) => `${service} deployed`,
});

const agentWith = (answer: string) =>
  defineAgent({
    name: 'ops',
    instructions: 'Deploy what you are asked to.',
    model: scriptedModel([{ toolCalls: [{ name: 'deploy', arguments: { service: 'api' } }] }, answer]),
    tools: [deploy],
  });

// 1. Wait mode (the default): the run waits at the `approval` checkpoint for a decision.
const control = new RunControl();
await new Promise<void>((done) => {
  run(agentWith('The api is live.'), 'Deploy the api', { control }).subscribe({
    next: (event) => {
      if (event.type === 'tool_approval_requested') {
        console.log(`asked: ${event.name} ${event.arguments}`);
        setTimeout(() => control.approve(event.callId), 10); // a person clicks Approve
      }
      if (event.type === 'tool_call_completed') console.log(`result: ${event.output}`);
      if (event.type === 'run_completed') console.log(`answer: ${event.output}`);
    },
    complete: done,
  });
});

// 2. Suspend mode: the run ends needs_approval, commits nothing, and leaves a JSON value.
const agent = agentWith('I did not deploy: it is Friday.');
const session = new MemorySession();
const first = await start(agent, 'Deploy the api', { approvals: 'suspend', session }).result;
const saved = JSON.stringify(first.suspended);
const pendingNames = first.suspended!.pending.map((c) => c.name).join(', ');
console.log(`suspended: ${pendingNames}; session items: ${session.items.length}`);

// … hours later, maybe in another process:
const suspended = JSON.parse(saved);
const decisions = { [suspended.pending[0].callId]: { approve: false, reason: 'no deploys on Fridays' } };
const handle = resume(agent, suspended, decisions, { session });
handle.events$.subscribe((event) => {
  if (event.type === 'tool_call_failed') console.log(`rejected: ${event.error.message}`);
});
const resumed = await handle.result;
console.log(`answer: ${resumed.output}; session items: ${session.items.length}`);
