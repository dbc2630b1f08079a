import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  ConfigurationError,
  RunFailedError,
  Mailbox,
  defineAgent,
  isConcurrentRunError,
  run,
  start,
  tool,
} from '../src/index.js';
import { gate, scriptedModel } from '../src/testing/index.js';

const fieldOf = (fn: () => unknown) => {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigurationError);
    return (e as ConfigurationError).field;
  }
  throw new Error('did not throw');
};

describe('bad definitions fail fast with the field named', () => {
  it('a tool whose parameters JSON Schema cannot express is refused at definition time', () => {
    expect(
      fieldOf(() => tool({ name: 'when', description: '', parameters: z.object({ d: z.date() }), execute: () => 'x' })),
    ).toBe('tool.parameters');
  });

  it('run() validates a plain definition like defineAgent does', () => {
    const model = scriptedModel(['x']);
    expect(fieldOf(() => run({ name: 'a', instructions: '', model, tools: 'nope' } as never, 'go'))).toBe(
      'agent.tools',
    );
    expect(fieldOf(() => run({ name: '', instructions: '', model } as never, 'go'))).toBe('agent.name');
    expect(model.requests).toHaveLength(0);
  });

  it('a plain definition that is valid runs', async () => {
    const handle = start({ name: 'a', instructions: '', model: scriptedModel(['hi']) } as never, 'go');
    await expect(handle.result).resolves.toMatchObject({ output: 'hi' });
  });
});

describe('RunFailedError.cause is the original error', () => {
  it('for a refused concurrent run and for a model error', async () => {
    const g = gate();
    const mailbox = new Mailbox();
    const agent = defineAgent({
      name: 'a',
      instructions: '',
      model: scriptedModel([{ text: 'slow', gate: g.promise }]),
    });
    const first = start(agent, 'one', { mailbox });
    const err = await start(agent, 'two', { mailbox }).result.catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RunFailedError);
    expect(isConcurrentRunError((err as RunFailedError).cause)).toBe(true);
    g.open();
    await first.result;
    const bad = defineAgent({ name: 'b', instructions: '', model: scriptedModel([{ error: new Error('boom') }]) });
    const failed = (await start(bad, 'x').result.catch((e: unknown) => e)) as RunFailedError;
    expect(failed.cause).toBeInstanceOf(Error);
    expect((failed.cause as Error).message).toBe('boom');
  });
});

describe('start() validates its options before making anything', () => {
  it('an AbortSignal passed as cancel, or null options, is a ConfigurationError naming the field', () => {
    const agent = defineAgent({ name: 'a', instructions: '', model: scriptedModel(['x']) });
    expect(fieldOf(() => start(agent, 'x', { cancel: new AbortController().signal } as never))).toBe('options.cancel');
    expect(fieldOf(() => start(agent, 'x', null as never))).toBe('options');
  });
});
