import type { Observable } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { z } from 'zod';
import { beforeEach, describe, expect, it } from 'vitest';
import { CancelSignal, defineAgent, run, tool, type Hooks, type RunEvent } from '../src/index.js';
import { scriptedModel } from '../src/testing/index.js';

/**
 * `run_cancelled.phase` says where the cancel was observed (the checkpoints
 * of docs/cancellation.md):
 * while any call of a batch still runs it is `tool_call`, whatever finished
 * or whichever hook ran before; a hook's phase ends with the hook; once the
 * batch is over, a cancel is seen at the next turn's entry. The model
 * answers at frame 1.
 */
let ts: TestScheduler;
beforeEach(() => {
  ts = new TestScheduler((actual, expected) => expect(actual).toEqual(expected));
});

function runWith(
  colds: Record<string, Observable<string>>,
  opts: { maxConcurrency?: number; hooks?: Hooks; calls?: string[] },
  onEvent: (e: RunEvent, cancel: CancelSignal) => void = () => {},
) {
  const names = Object.keys(colds);
  const tools = names.map((name) =>
    tool({ name, description: name, parameters: z.object({}), execute: () => colds[name]! }),
  );
  const calls = opts.calls ?? names;
  const model = scriptedModel([
    { toolCalls: calls.map((name) => ({ name, callId: name })), delayMs: 1 },
    { text: 'done', delayMs: 1 },
  ]);
  const agent = defineAgent({
    name: 'phase',
    instructions: '',
    model,
    tools,
    hooks: opts.hooks,
    ...(opts.maxConcurrency ? { parallelToolCalls: { maxConcurrency: opts.maxConcurrency } } : {}),
  });
  const cancel = new CancelSignal();
  const log: string[] = [];
  run(agent, 'go', { cancel }).subscribe((e) => {
    log.push(`${ts.now()} ${e.type === 'run_cancelled' ? `run_cancelled:${e.phase}` : e.type}`);
    onEvent(e, cancel);
  });
  return { cancel, log, model };
}

describe('marbles: phase of a cancel around a batch', () => {
  const afterHooks: Record<string, (cold: TestScheduler['createColdObservable']) => Hooks | undefined> = {
    'no hook': () => undefined,
    'a sync afterToolCall hook': () => ({ afterToolCall: () => undefined }),
    'an Observable afterToolCall hook (2 frames)': (cold) => ({
      afterToolCall: ({ call }) => (call.name === 'a' ? cold('-h|') : undefined),
    }),
  };
  for (const [name, hooks] of Object.entries(afterHooks)) {
    it(`pool: a finished, b still running, nothing queued; a cancel is observed in tool_call (${name})`, () => {
      ts.run(({ cold, expectSubscriptions }) => {
        const a = cold('-x|', { x: 'A' });
        const b = cold('--------x|', { x: 'B' });
        const s = runWith(
          { a, b },
          { maxConcurrency: 2, hooks: hooks(cold.bind(ts) as TestScheduler['createColdObservable']) },
        );
        ts.schedule(() => s.cancel.cancel('stop'), 7);
        ts.flush();
        expect(s.log.at(-1)).toBe('7 run_cancelled:tool_call');
        expectSubscriptions(b.subscriptions).toBe('-^-----!');
      });
    });
  }

  it('sequential: a cancel during a (synchronous) beforeToolCall hook is phase hook; one raised right after a refused call is phase dispatch', () => {
    ts.run(({ cold }) => {
      const a = cold('-x|', { x: 'A' });
      const hookCancels = runWith({ a }, { hooks: { beforeToolCall: ({ cancel }) => cancel.cancel('in hook') } });
      const refused = runWith(
        { a },
        { calls: ['a', 'nope'], hooks: { beforeToolCall: () => undefined } },
        (e, cancel) => {
          if (e.type === 'tool_call_failed') cancel.cancel('after refusal');
        },
      );
      ts.flush();
      expect(hookCancels.log.at(-1)).toBe('1 run_cancelled:hook');
      expect(refused.log.slice(-2)).toEqual(['1 tool_call_failed', '1 run_cancelled:dispatch']);
    });
  });

  for (const [name, hooks] of Object.entries(afterHooks)) {
    it(`a cancel raised synchronously in the turn_completed handler after a batch is observed at turn_entry (${name})`, () => {
      ts.run(({ cold }) => {
        const a = cold('-x|', { x: 'A' });
        const s = runWith(
          { a },
          { hooks: hooks(cold.bind(ts) as TestScheduler['createColdObservable']) },
          (e, cancel) => {
            if (e.type === 'turn_completed') cancel.cancel('between turns');
          },
        );
        ts.flush();
        expect(s.log.at(-1)).toMatch(/^\d+ run_cancelled:turn_entry$/);
        expect(s.model.requests).toHaveLength(1);
      });
    });
  }
});
