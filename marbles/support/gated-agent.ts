import type { TestScheduler } from 'rxjs/testing';
import { z } from 'zod';
import { defineAgent, tool } from '../../src/index.js';
import { scriptedModel } from '../../src/testing/index.js';

/**
 * The approval specs' agent: the model asks at frame 1 for `gated` (needsApproval; runs 3 frames once
 * approved) and, with `parallel`, `free` (no approval; runs 6 frames) in the same batch (2 at a time); its
 * second response ('done') comes 1 frame after its request. `started` lists the tools that began, in order.
 */
export function gatedAgent(ts: TestScheduler, options: { parallel?: boolean } = {}) {
  const started: string[] = [];
  const gated = tool({
    name: 'gated',
    description: 'gated',
    parameters: z.object({}),
    needsApproval: true,
    execute: () => {
      started.push('gated');
      return ts.createColdObservable('--x|', { x: 'G' });
    },
  });
  const free = tool({
    name: 'free',
    description: 'free',
    parameters: z.object({}),
    execute: () => {
      started.push('free');
      return ts.createColdObservable('-----x|', { x: 'F' });
    },
  });
  const calls = [{ name: 'gated', callId: 'g' }, ...(options.parallel ? [{ name: 'free', callId: 'f' }] : [])];
  const model = scriptedModel([
    { toolCalls: calls, delayMs: 1 },
    { text: 'done', delayMs: 1 },
  ]);
  const parallelToolCalls = options.parallel ? { maxConcurrency: 2 } : undefined;
  const agent = defineAgent({
    name: 'a',
    instructions: '',
    model,
    tools: [gated, free],
    ...(parallelToolCalls ? { parallelToolCalls } : {}),
  });
  return { agent, model, started };
}
