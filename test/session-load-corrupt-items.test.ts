/**
 * A session store that gives back an array holding a corrupt row (null, an assistant Item without
 * `toolCalls`, a toolCalls list holding null, a Proxy that throws) made the history repair throw
 * inside the load's handler: rxjs reported it as unhandled (by default rethrown on a timer, which
 * ends a Node process) and the run went on without the history. Now the loaded history is checked
 * first ("foreign values are never trusted"): a row that is not an Item fails the run with exactly
 * one terminal event, `run_failed` with `stopReason: 'session_error'` (the store's bad data) and a
 * TypeError naming the row; the model is never asked, and the stored history is left as it is.
 */
import { config } from 'rxjs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { defineAgent, run, type RunEvent, type Session } from '../src/index.js';
import { scriptedModel } from '../src/testing/index.js';

const caught: unknown[] = [];
let previous: typeof config.onUnhandledError;
beforeEach(() => {
  caught.length = 0;
  previous = config.onUnhandledError;
  config.onUnhandledError = (e) => void caught.push(e);
});
afterEach(() => {
  config.onUnhandledError = previous;
});

const ROWS: [string, unknown, string][] = [
  ['null', null, 'item 1 is not an Item (Invalid input: expected object, received null)'],
  [
    'an assistant Item without toolCalls',
    { type: 'assistant', id: 'a1', text: 'hello' },
    'item 1 is not an Item (toolCalls: Invalid input: expected array, received undefined)',
  ],
  [
    'an assistant Item whose toolCalls hold null',
    { type: 'assistant', id: 'a1', text: '', toolCalls: [null] },
    'item 1 is not an Item (toolCalls[0]: Invalid input: expected object, received null)',
  ],
  [
    'a Proxy that throws on every read',
    new Proxy(
      {},
      {
        get: () => {
          throw new Error('trap');
        },
      },
    ),
    'item 1 cannot be read',
  ],
];

describe('session.load() gives an array holding a corrupt row', () => {
  for (const [name, row, why] of ROWS) {
    it(`${name}: run_failed{session_error} naming the row, nothing unhandled, the model never asked`, async () => {
      const model = scriptedModel(['done']);
      const agent = defineAgent({ name: 'a', instructions: '', model });
      const good = { type: 'user', id: 'u0', text: 'earlier question' };
      let appends = 0;
      const session: Session = { load: () => [good, row] as never, append: () => void appends++ };
      const events: RunEvent[] = [];
      await new Promise<void>((resolve) =>
        run(agent, 'go', { session }).subscribe({ next: (e) => events.push(e), complete: () => resolve() }),
      );
      // rxjs reports an unhandled error on a timer with no delay, set during the run; ours, set after, runs after it.
      await new Promise((r) => setTimeout(r, 0));
      expect(caught).toHaveLength(0);
      expect(events.map((e) => e.type)).toEqual(['run_started', 'run_failed']);
      expect(events.at(-1)).toMatchObject({
        type: 'run_failed',
        stopReason: 'session_error',
        error: { name: 'TypeError', message: `session.load() must give an array of Items: ${why}` },
        partial: [{ type: 'user', text: 'go' }],
      });
      expect(model.requests).toHaveLength(0);
      expect(appends).toBe(0);
    });
  }
});
