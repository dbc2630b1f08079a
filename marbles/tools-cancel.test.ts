import type { Observable } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { z } from 'zod';
import { beforeEach, describe, expect, it } from 'vitest';
import {
  CancelSignal,
  defineAgent,
  run,
  tool,
  type Item,
  type RunCancelled,
  type RunEvent,
  type Tool,
} from '../src/index.js';
import { scriptedModel, sequentialIds } from '../src/testing/index.js';
import { observe as observeRun } from './support/observe.js';

/**
 * Checkpoint 10: dispatch (the dispatch / timeout layer): on cancel the batch is not
 * continued, finished siblings keep their results in `partial`, running ones
 * are torn down (their `ctx.signal` aborts with the reason), never-started
 * ones get no `tool_call_started` and an interrupted result. Timeline entries
 * are `frame label`; the model answers at frame 1.
 */
let ts: TestScheduler;
beforeEach(() => {
  ts = new TestScheduler((actual, expected) => expect(actual).toEqual(expected));
});

function observe(events$: Observable<RunEvent>, onEvent?: (e: RunEvent) => void) {
  const observed = observeRun(ts, events$, onEvent);
  return { ...observed, terminal: () => observed.events.at(-1) as RunCancelled };
}

function setup(colds: Record<string, Observable<string>>, opts: { maxConcurrency?: number; timeoutMs?: number } = {}) {
  const names = Object.keys(colds);
  const signals: Record<string, AbortSignal> = {};
  const hookCalls: string[] = [];
  const tools: Tool[] = names.map((name) =>
    tool({
      name,
      description: name,
      parameters: z.object({}),
      timeoutMs: opts.timeoutMs,
      execute: (_args, ctx) => {
        signals[name] = ctx.signal;
        return colds[name]!;
      },
    }),
  );
  const model = scriptedModel([
    { toolCalls: names.map((name) => ({ name, callId: name })), delayMs: 1 },
    { text: 'done', delayMs: 1 },
  ]);
  const agent = defineAgent({
    name: 'batch',
    instructions: '',
    model,
    tools,
    hooks: { beforeToolCall: ({ call }) => void hookCalls.push(call.name) },
    ...(opts.maxConcurrency ? { parallelToolCalls: { maxConcurrency: opts.maxConcurrency } } : {}),
  });
  return { model, agent, signals, hookCalls };
}

const result = (callId: string, output: string): Item => ({ type: 'tool_result', callId, output, isError: false });
const interrupted = (callId: string): Item => ({
  type: 'tool_result',
  callId,
  output: expect.any(String) as unknown as string,
  isError: true,
  interrupted: true,
});

describe('marbles: dispatch, cancel mid-batch (row 10)', () => {
  it('pool: finished sibling keeps its result, running ones are torn down, the never-started one gets no event', () => {
    ts.run(({ cold, expectSubscriptions }) => {
      const a = cold('--x|', { x: 'A' });
      const b = cold('--------x|', { x: 'B' });
      const c = cold('--------x|', { x: 'C' });
      const d = cold('x|', { x: 'D' });
      const { model, agent, signals, hookCalls } = setup({ a, b, c, d }, { maxConcurrency: 2 });
      const cancel = new CancelSignal();
      ts.schedule(() => cancel.cancel('stop'), 6);
      const { log, terminal } = observe(run(agent, 'go', { cancel, idGenerator: sequentialIds() }));
      ts.flush();
      expect(log.slice(4)).toEqual([
        '1 tool_call_started:a',
        '1 tool_call_started:b',
        '4 tool_call_completed:a',
        '4 tool_call_started:c',
        '6 run_cancelled:tool_call',
      ]);
      expect(hookCalls).toEqual(['a', 'b', 'c', 'd']); // all prepared before any start
      expectSubscriptions(a.subscriptions).toBe('-^--!');
      expectSubscriptions(b.subscriptions).toBe('-^----!');
      expectSubscriptions(c.subscriptions).toBe('----^-!');
      expectSubscriptions(d.subscriptions).toBe([]);
      expect(signals.a!.aborted).toBe(false); // finished: nothing to abort
      expect([signals.b!.reason, signals.c!.reason]).toEqual(['stop', 'stop']);
      expect(signals.d).toBeUndefined(); // never executed
      expect(terminal().partial.slice(2)).toEqual([
        result('a', 'A'),
        interrupted('b'),
        interrupted('c'),
        interrupted('d'),
      ]);
      expect(model.requests).toHaveLength(1);
    });
  });

  it('sequential: the finished call keeps its result, the running one is torn down, the rest never start', () => {
    ts.run(({ cold, expectSubscriptions }) => {
      const a = cold('-x|', { x: 'A' });
      const b = cold('-----x|', { x: 'B' });
      const c = cold('x|', { x: 'C' });
      const { agent, signals } = setup({ a, b, c });
      const cancel = new CancelSignal();
      ts.schedule(() => cancel.cancel('stop'), 6);
      const { log, terminal } = observe(run(agent, 'go', { cancel, idGenerator: sequentialIds() }));
      ts.flush();
      expect(log.slice(4)).toEqual([
        '1 tool_call_started:a',
        '3 tool_call_completed:a',
        '3 tool_call_started:b',
        '6 run_cancelled:tool_call',
      ]);
      expectSubscriptions(a.subscriptions).toBe('-^-!');
      expectSubscriptions(b.subscriptions).toBe('---^--!');
      expectSubscriptions(c.subscriptions).toBe([]);
      expect(signals.b!.reason).toBe('stop');
      expect(terminal().partial.slice(2)).toEqual([result('a', 'A'), interrupted('b'), interrupted('c')]);
    });
  });
});

describe('marbles: dispatch entry, tie with the model response (row 10, checks before)', () => {
  it('cancel scheduled first in the response frame: the response is never recorded, nothing is prepared', () => {
    ts.run(({ cold }) => {
      const a = cold('x|', { x: 'A' });
      const { agent, hookCalls } = setup({ a });
      const cancel = new CancelSignal();
      ts.schedule(() => cancel.cancel('stop'), 1);
      const { log, terminal } = observe(run(agent, 'go', { cancel, idGenerator: sequentialIds() }));
      ts.flush();
      expect(log.slice(3)).toEqual(['1 run_cancelled:model_request']);
      expect(hookCalls).toEqual([]);
      expect(terminal().partial).toEqual([{ type: 'user', id: 'item-1', text: 'go' }]);
    });
  });

  for (const how of ['synchronously', 'scheduled'] as const) {
    it(`cancel raised in the handler of model_response_completed (${how}): no hook, no tool, calls paired as interrupted`, () => {
      ts.run(({ cold, expectSubscriptions }) => {
        const a = cold('x|', { x: 'A' });
        const b = cold('x|', { x: 'B' });
        const { agent, hookCalls } = setup({ a, b }, { maxConcurrency: 2 });
        const cancel = new CancelSignal();
        const { log, terminal } = observe(run(agent, 'go', { cancel, idGenerator: sequentialIds() }), (e) => {
          if (e.type !== 'model_response_completed') return;
          if (how === 'synchronously') cancel.cancel('stop');
          else ts.schedule(() => cancel.cancel('stop'), 0);
        });
        ts.flush();
        expect(log.slice(3)).toEqual(['1 model_response_completed', '1 run_cancelled:dispatch']);
        expect(hookCalls).toEqual([]);
        expectSubscriptions(a.subscriptions).toBe([]);
        expectSubscriptions(b.subscriptions).toBe([]);
        expect(terminal().partial.slice(1)).toEqual([
          expect.objectContaining({
            type: 'assistant',
            toolCalls: [expect.objectContaining({ callId: 'a' }), expect.objectContaining({ callId: 'b' })],
          }),
          interrupted('a'),
          interrupted('b'),
        ]);
      });
    });
  }
});

describe('marbles: timeout layer, tie with a cancel (row 10)', () => {
  it('cancel scheduled first in the frame the tool times out: a cancel, never a tool error', () => {
    ts.run(({ cold, expectSubscriptions }) => {
      const a = cold('------x|', { x: 'A' });
      const { agent, signals } = setup({ a }, { timeoutMs: 3 });
      const cancel = new CancelSignal();
      ts.schedule(() => cancel.cancel('stop'), 4);
      const { log, terminal } = observe(run(agent, 'go', { cancel, idGenerator: sequentialIds() }));
      ts.flush();
      expect(log.slice(4)).toEqual(['1 tool_call_started:a', '4 run_cancelled:tool_call']);
      expectSubscriptions(a.subscriptions).toBe('-^--!');
      expect(signals.a!.reason).toBe('stop');
      expect(terminal().partial.slice(2)).toEqual([interrupted('a')]);
    });
  });

  it('cancel raised after the timeout in the same frame: the timeout result is kept, the batch is not continued', () => {
    ts.run(({ cold, expectSubscriptions }) => {
      const a = cold('------x|', { x: 'A' });
      const b = cold('x|', { x: 'B' });
      const { model, agent, signals } = setup({ a, b }, { timeoutMs: 3 });
      const cancel = new CancelSignal();
      const { log, terminal } = observe(run(agent, 'go', { cancel, idGenerator: sequentialIds() }), (e) => {
        if (e.type === 'tool_call_failed') ts.schedule(() => cancel.cancel('stop'), 0);
      });
      ts.flush();
      expect(log.slice(4)).toEqual(['1 tool_call_started:a', '4 tool_call_failed:a', '4 run_cancelled:between_tools']);
      expectSubscriptions(a.subscriptions).toBe('-^--!');
      expectSubscriptions(b.subscriptions).toBe([]);
      expect((signals.a!.reason as Error).name).toBe('TimeoutError');
      expect(terminal().partial.slice(2)).toEqual([
        { type: 'tool_result', callId: 'a', output: 'Error: tool a timed out after 3 ms', isError: true },
        interrupted('b'),
      ]);
      expect(model.requests).toHaveLength(1);
    });
  });
});
