/**
 * How recovery's final errors are reported on `run_failed` (the `StopReason`
 * doc comment): every model failure is `model_error`, never `internal_error`.
 */
import { EMPTY } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { defineAgent } from '../src/engine/define-agent.js';
import { run } from '../src/engine/run.js';
import { ModelCallError } from '../src/errors.js';
import { collectEvents, scriptedModel } from '../src/testing/index.js';

describe('run_failed after recovery gave up', () => {
  it('a ModelCallError → model_error', async () => {
    const agent = defineAgent({
      name: 'a',
      instructions: '',
      model: scriptedModel([{ error: new ModelCallError('bad', { status: 400 }) }]),
    });
    expect((await collectEvents(run(agent, 'q'))).at(-1)).toMatchObject({
      type: 'run_failed',
      stopReason: 'model_error',
    });
  });

  it('a model deadline (TimeoutError) → model_error', async () => {
    const agent = defineAgent({ name: 'a', instructions: '', model: scriptedModel([{ delayMs: 50 }]) });
    const events = await collectEvents(run(agent, 'q', { retry: false, deadlines: { firstEventMs: 1 } }));
    expect(events.at(-1)).toMatchObject({
      type: 'run_failed',
      stopReason: 'model_error',
      error: { name: 'TimeoutError', kind: 'first_event' },
    });
  });

  it('a provider that ends without a response (ModelOutputError) → model_error', async () => {
    const agent = defineAgent({ name: 'a', instructions: '', model: { id: 'm', call: () => EMPTY } });
    const events = await collectEvents(run(agent, 'q'));
    expect(events.at(-1)).toMatchObject({
      type: 'run_failed',
      stopReason: 'model_error',
      error: { name: 'ModelOutputError' },
    });
  });
});
