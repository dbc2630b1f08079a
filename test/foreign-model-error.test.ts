/**
 * Foreign values are never trusted: a ModelProvider whose Observable errors with a value whose
 * prototype cannot be read (a revoked Proxy, or a Proxy whose getPrototypeOf trap throws). The
 * recovery operators classify every failure of a model call (is it a model error? a broken stream
 * to rescue? a breaker's refusal?); an `instanceof` there threw a TypeError that escaped, so the
 * run never ended (guarantee 1: one terminal event, last) and `handle.result` never settled.
 * A provider's error that is not a model error fails the run `internal_error` (docs/events.md).
 */
import { config, Observable, throwError } from 'rxjs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { RunFailedError, defineAgent, start, type ModelProvider, type RunEvent } from '../src/index.js';

const caught: unknown[] = [];
let previous: typeof config.onUnhandledError;
const onCaught = (e: unknown): void => void caught.push(e);
beforeEach(() => {
  caught.length = 0;
  previous = config.onUnhandledError;
  config.onUnhandledError = onCaught;
  process.on('uncaughtException', onCaught);
});
afterEach(() => {
  config.onUnhandledError = previous;
  process.off('uncaughtException', onCaught);
});

const revoked = (): object => {
  const { proxy, revoke } = Proxy.revocable({}, {});
  revoke();
  return proxy;
};
const noPrototype = (): object =>
  new Proxy(
    {},
    {
      getPrototypeOf: () => {
        throw new Error('trap');
      },
    },
  );

/** The outcome of `handle.result`, or 'never settled' (a bound for the hang this spec pins, not a speed check). */
const settlement = (result: Promise<unknown>): Promise<unknown> =>
  Promise.race([
    result.then(
      () => 'resolved',
      (e: unknown) => e,
    ),
    new Promise((r) => setTimeout(() => r('never settled'), 10_000)),
  ]);

const UNPRINTABLE = { name: 'Error', message: '[unprintable thrown value]' };

describe('a provider that errors with a value whose prototype cannot be read', () => {
  const values = [
    ['a revoked Proxy', revoked, '[unprintable thrown value]'],
    ['a Proxy whose getPrototypeOf throws', noPrototype, '{}'], // its keys can be read: described as JSON
  ] as const;
  for (const [name, make, message] of values) {
    it(`${name}: one terminal event (run_failed internal_error), result settles, nothing uncaught`, async () => {
      const model: ModelProvider = { id: 'hostile', call: () => throwError(() => make()) };
      const agent = defineAgent({ name: 'a', instructions: '', model });
      const handle = start(agent, 'go', { retry: false });
      const events: RunEvent[] = [];
      let errored = false;
      handle.events$.subscribe({ next: (e) => events.push(e), error: () => (errored = true) });
      const settled = await settlement(handle.result);
      expect(settled).toBeInstanceOf(RunFailedError);
      expect(settled).toMatchObject({ stopReason: 'internal_error' });
      expect(errored).toBe(false);
      expect(events.map((e) => e.type)).toEqual(['run_started', 'turn_started', 'model_request_started', 'run_failed']);
      const error = { name: 'Error', message };
      expect(events.at(-1)).toMatchObject({ type: 'run_failed', stopReason: 'internal_error', error });
      expect(caught).toHaveLength(0);
    });
  }

  it('the same value from a stream after its first delta (the rescue path): rescued once, then failed', async () => {
    let calls = 0;
    const model: ModelProvider = {
      id: 'hostile',
      call: () =>
        new Observable((s) => {
          calls++;
          s.next({ type: 'text_delta', delta: 'Hel' });
          s.error(revoked());
        }),
    };
    const agent = defineAgent({ name: 'a', instructions: '', model });
    const handle = start(agent, 'go', { retry: false });
    const events: RunEvent[] = [];
    handle.events$.subscribe((e) => events.push(e));
    expect(await settlement(handle.result)).toBeInstanceOf(RunFailedError);
    // The broken stream is rescued once (a request without streaming), which fails the same way.
    expect(calls).toBe(2);
    expect(events.filter((e) => e.type === 'model_request_started')).toMatchObject([
      { attempt: 1, stream: true },
      { attempt: 2, stream: false, cause: 'rescue', error: UNPRINTABLE },
    ]);
    expect(events.filter((e) => e.type.startsWith('run_') && e.type !== 'run_started')).toHaveLength(1);
    expect(events.at(-1)).toMatchObject({ type: 'run_failed', stopReason: 'internal_error', error: UNPRINTABLE });
    expect(caught).toHaveLength(0);
  });
});
