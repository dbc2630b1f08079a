/**
 * Steering a live run through `steer$`: every string the Observable emits is
 * pushed into the run's mailbox while the run lives, and lands at the start
 * of the next turn as a user message (`user_message_injected`).
 *
 *   npx tsx examples/steering.ts
 */
import { Subject } from 'rxjs';
import { z } from 'zod';
import { defineAgent, run, tool } from 'loopctl';
import { scriptedModel } from 'loopctl/testing';

const typed = new Subject<string>(); // e.g. lines from a text box or stdin

const search = tool({
  name: 'search_logs',
  description: 'Searches the logs',
  parameters: z.object({ query: z.string() }),
  execute: async ({ query }) => {
    typed.next('Focus on the 5xx spike around 14:00.'); // the user types while the tool runs
    return `3 matches for ${query}`;
  },
});

const model = scriptedModel([
  { toolCalls: [{ name: 'search_logs', arguments: { query: 'error' } }] },
  { text: 'The 5xx spike at 14:00 came from the payment service.' },
]);
const agent = defineAgent({ name: 'analyst', instructions: 'You analyse logs.', model, tools: [search] });

run(agent, 'Analyse the logs', { steer$: typed }).subscribe((event) => {
  if (event.type === 'user_message_injected') console.log(`steering injected at turn ${event.turn}: ${event.content}`);
  if (event.type === 'run_completed') {
    console.log(`answer: ${event.output}`);
    const second = model.requests[1]!.items.at(-1);
    console.log(`the second model request ends with: ${JSON.stringify(second)}`);
  }
});
