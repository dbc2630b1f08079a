import { describe, expect, it } from 'vitest';
import { CancelSignal, ConfigurationError, ModelCallError, defineAgent, start } from '../src/index.js';
import { loopctlMatchers, scriptedModel } from '../src/testing/index.js';

/** The assertion error a failing `expect(...)` throws, for its message. */
function failureOf(assertion: () => void): Error {
  try {
    assertion();
  } catch (error) {
    return error as Error;
  }
  throw new Error('the assertion passed');
}

describe('loopctl/testing: toMatchLoopctlError (registered with expect.extend)', () => {
  const bad = new ConfigurationError('options.maxTurns', 'must be a positive integer');

  it('passes when every expected field equals the normalised error (fields not named are ignored)', () => {
    expect(bad).toMatchLoopctlError({ name: 'ConfigurationError', field: 'options.maxTurns' });
    expect(bad).toMatchLoopctlError({ message: 'options.maxTurns: must be a positive integer' });
    expect(new ModelCallError('overloaded', { status: 503, retryable: true })).toMatchLoopctlError({
      name: 'ModelCallError',
      status: 503,
      retryable: true,
      message: expect.stringContaining('overload'),
    });
    expect('just a string').toMatchLoopctlError({ name: 'Error', message: 'just a string' });
  });

  it('fails on a mismatch, naming each mismatched field', () => {
    const expected = { name: 'ConfigurationError', field: 'agent.name' };
    const failure = failureOf(() => expect(bad).toMatchLoopctlError(expected));
    expect(failure.message).toBe(
      [
        'expected the error to match {"name":"ConfigurationError","field":"agent.name"}',
        '  field: expected "agent.name", received "options.maxTurns"',
        'normalized error: {"name":"ConfigurationError","message":"options.maxTurns: must be a positive integer",' +
          '"field":"options.maxTurns"}',
      ].join('\n'),
    );
  });

  it('fails when a field expected as undefined is present, or an expected field is missing', () => {
    const present = failureOf(() => expect(bad).toMatchLoopctlError({ field: undefined }));
    expect(present.message.split('\n')[1]).toBe('  field: expected undefined, received "options.maxTurns"');
    const missing = failureOf(() => expect(new Error('plain')).toMatchLoopctlError({ status: 500 }));
    expect(missing.message.split('\n')[1]).toBe('  status: expected 500, received undefined');
  });

  it('.not passes on a mismatch and fails on a match', () => {
    expect(bad).not.toMatchLoopctlError({ field: 'agent.name' });
    const failure = failureOf(() => expect(bad).not.toMatchLoopctlError({ field: 'options.maxTurns' }));
    expect(failure.message.split('\n')[0]).toBe('expected the error not to match {"field":"options.maxTurns"}');
  });

  it('works on a rejection: a run cancelled before it starts', async () => {
    const cancel = new CancelSignal();
    cancel.cancel('stop');
    const agent = defineAgent({ name: 'a', instructions: '', model: scriptedModel(['never sent']) });
    await expect(start(agent, 'go', { cancel }).result).rejects.toMatchLoopctlError({
      name: 'RunCancelledError',
      message: 'run cancelled at turn_entry: stop',
    });
  });

  it('refuses an expected value that is not an object, naming it', () => {
    // @ts-expect-error the expected error must be an object
    expect(() => expect(bad).toMatchLoopctlError('ConfigurationError')).toThrow(
      new TypeError('toMatchLoopctlError: expected must be an object like { name, message }, got "ConfigurationError"'),
    );
  });

  it('returns the compared fields as actual, for the runner to diff', () => {
    const context = { isNot: false, equals: (a: unknown, b: unknown) => a === b };
    const result = loopctlMatchers.toMatchLoopctlError.call(context, bad, { field: 'agent.name', status: 400 });
    expect(result.pass).toBe(false);
    expect(result.actual).toEqual({ field: 'options.maxTurns' });
    expect(result.expected).toEqual({ field: 'agent.name', status: 400 });
  });
});
