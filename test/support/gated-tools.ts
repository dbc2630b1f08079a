/**
 * Tools the approval and terminal specs share: `hang` runs until its call is aborted, `write_file` needs
 * approval, and `deploy` (needs approval) records each service it deployed.
 */
import { z } from 'zod';
import { tool } from '../../src/index.js';

/** Runs until cancelled (its signal aborts): a call that is running when the run ends. */
export const hang = tool({
  name: 'hang',
  description: 'Runs until cancelled.',
  parameters: z.object({}),
  execute: (_args, ctx) =>
    new Promise<string>((_resolve, reject) => ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason))),
});

/** Needs approval; answers 'written'. */
export const writeFile = tool({
  name: 'write_file',
  description: 'Writes a file.',
  parameters: z.object({ path: z.string() }),
  needsApproval: true,
  execute: async () => 'written',
});

/** A `deploy` tool that needs approval and pushes each deployed service into `executed`. */
export function deployTool(executed: string[]) {
  return tool({
    name: 'deploy',
    description: 'Deploys a service.',
    parameters: z.object({ service: z.string() }),
    needsApproval: true,
    execute: ({ service }) => {
      executed.push(service);
      return `deployed ${service}`;
    },
  });
}
