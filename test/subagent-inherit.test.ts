import { VirtualTimeScheduler } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { defineAgent, run, type RunEvent } from '../src/index.js';
import { scriptedModel, sequentialIds } from '../src/testing/index.js';

describe('a sub-run inherits its parent run time and id sources', () => {
  it('runs in the parent scheduler virtual time, with the parent id generator', () => {
    const scheduler = new VirtualTimeScheduler();
    const child = defineAgent({
      name: 'child',
      instructions: '',
      model: scriptedModel([{ text: 'child says hi', delayMs: 500 }], { scheduler }),
    });
    const parentModel = scriptedModel(
      [
        { toolCalls: [{ name: 'ask_child', arguments: { input: 'hi' } }], delayMs: 100 },
        { text: 'done', delayMs: 100 },
      ],
      { scheduler },
    );
    const parent = defineAgent({
      name: 'parent',
      instructions: '',
      model: parentModel,
      tools: [child.asTool({ name: 'ask_child', description: 'Asks the child' })],
    });
    const events: RunEvent[] = [];
    run(parent, 'go', { scheduler, idGenerator: sequentialIds() }).subscribe((e) => events.push(e));
    scheduler.flush();
    const relayed = events.filter((e) => e.type === 'subrun_event');
    const childDone = relayed
      .map((e) => (e.type === 'subrun_event' ? e.event : undefined))
      .find((e) => e?.type === 'run_completed');
    expect(childDone).toMatchObject({ type: 'run_completed', output: 'child says hi', at: 600 });
    expect(relayed[0]).toMatchObject({ path: ['ask_child'], event: { type: 'run_started', runId: 'run-2' } });
    expect(events.at(-1)).toMatchObject({ type: 'run_completed', output: 'done', at: 700, runId: 'run-1' });
    expect(scheduler.actions).toHaveLength(0);
  });
});
