/**
 * Keeping what a cancelled run did: a cancelled run leaves the session as it
 * was and hands back `partial` (every tool call paired, streamed text marked
 * interrupted). `commitPartial` saves it and withdraws from the mailbox the
 * steering it already contains, so nothing is sent twice.
 *
 *   npx tsx examples/commit-partial.ts
 */
import { NEVER } from 'rxjs';
import { CancelSignal, Mailbox, MemorySession, commitPartial, defineAgent, run } from 'loopctl';
import { scriptedModel } from 'loopctl/testing';

const session = new MemorySession();
const mailbox = new Mailbox();
const cancel = new CancelSignal();
const agent = defineAgent({
  name: 'writer',
  instructions: '',
  // streams two words, then stalls until cancelled
  model: scriptedModel([{ text: ['Hello', ' world'], hold: NEVER }, 'Goodbye.']),
});

mailbox.push('Write in French.');
run(agent, 'Write a greeting', { session, mailbox, cancel }).subscribe(async (event) => {
  if (event.type === 'text_delta' && event.delta === ' world') cancel.cancel('user stop');
  if (event.type === 'run_cancelled') {
    console.log(`session before commit: ${session.items.length} items`);
    const withdrawn = await commitPartial(session, event, mailbox); // the event's runId makes a repeat store nothing
    console.log(`committed ${event.partial.length} items; withdrawn from the mailbox: ${withdrawn.length}`);
    for (const item of session.items) console.log(JSON.stringify(item));
  }
});
