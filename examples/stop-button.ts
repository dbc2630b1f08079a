/**
 * A stop button through `cancel$`: any Observable can stop a run. Here a
 * Subject stands in for `fromEvent(stopButton, 'click')`; the run is stopped
 * while its tool is working, and `run_cancelled` arrives before `next()` returns.
 *
 *   npx tsx examples/stop-button.ts
 */
import { Subject } from 'rxjs';
import { z } from 'zod';
import { defineAgent, run, tool } from 'loopctl';
import { scriptedModel } from 'loopctl/testing';

const stopClicks = new Subject<string>();

const crawl = tool({
  name: 'crawl',
  description: 'Crawls a site (slowly)',
  parameters: z.object({ url: z.string() }),
  execute: ({ url }, ctx) =>
    new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => resolve(`crawled ${url}`), 10_000);
      ctx.signal.addEventListener('abort', () => (clearTimeout(timer), reject(ctx.signal.reason)), { once: true });
    }),
});

const agent = defineAgent({
  name: 'crawler',
  instructions: 'Crawl what you are asked to.',
  model: scriptedModel([
    { toolCalls: [{ name: 'crawl', arguments: { url: 'https://example.com' } }] },
    'Done crawling.',
  ]),
  tools: [crawl],
});

run(agent, 'Crawl example.com', { cancel$: stopClicks }).subscribe((event) => {
  console.log(event.type);
  if (event.type === 'tool_call_started') setTimeout(() => stopClicks.next('stop button clicked'), 20);
  if (event.type === 'run_cancelled') console.log(`stopped at ${event.phase}: ${String(event.reason)}`);
});
