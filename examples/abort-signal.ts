/**
 * AbortSignal interop: a run accepts any AbortSignal (from a fetch handler,
 * an Express request, `AbortSignal.timeout(ms)`), and tools receive their own
 * AbortSignal in `ctx.signal` to pass to fetch, fs or child processes.
 * An already-aborted signal cancels every run it is given; use a
 * CancelSignal when you need a token that re-arms after each cancelled run.
 *
 *   npx tsx examples/abort-signal.ts
 */
import { z } from 'zod';
import { defineAgent, start, tool, isCancellation } from 'loopctl';
import { scriptedModel } from 'loopctl/testing';

const wait = tool({
  name: 'wait',
  description: 'Waits',
  parameters: z.object({ ms: z.number() }),
  execute: ({ ms }, ctx) =>
    new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => resolve('waited'), ms);
      ctx.signal.addEventListener('abort', () => (clearTimeout(timer), reject(ctx.signal.reason)), { once: true });
    }),
});

const agent = defineAgent({
  name: 'waiter',
  instructions: '',
  model: scriptedModel([{ toolCalls: [{ name: 'wait', arguments: { ms: 5_000 } }] }, 'done']),
  tools: [wait],
});

const handle = start(agent, 'wait a bit', { signal: AbortSignal.timeout(50) });
try {
  await handle.result;
} catch (err) {
  if (isCancellation(err)) console.log(`cancelled at ${err.phase} by ${(err.reason as Error).name}`);
  else throw err;
}
