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
 * Checkpoint 7: wave boundary: the parallel pool (`parallelToolCalls.maxConcurrency`)
 * polls the token before each start. Timeline entries are `frame label`.
 * The model answers at frame 1 with calls a, b, c; the pool starts at frame 1.
 */
let ts: TestScheduler;
beforeEach(() => {
  ts = new TestScheduler((actual, expected) => expect(actual).toEqual(expected));
});

const observe = (events$: Observable<RunEvent>, onEvent?: (e: RunEvent) => void) => observeRun(ts, events$, onEvent);

const obsTool = (name: string, out: Observable<string>): Tool =>
  tool({ name, description: name, parameters: z.object({}), execute: () => out });

function setup(colds: Record<string, Observable<string>>, maxConcurrency: number) {
  const names = Object.keys(colds);
  const model = scriptedModel([
    { toolCalls: names.map((name) => ({ name, callId: name })), delayMs: 1 },
    { text: 'done', delayMs: 1 },
  ]);
  const agent = defineAgent({
    name: 'pool',
    instructions: '',
    model,
    tools: names.map((n) => obsTool(n, colds[n]!)),
    parallelToolCalls: { maxConcurrency },
  });
  return { model, agent };
}

const result = (callId: string, output: string): Item => ({ type: 'tool_result', callId, output, isError: false });
const interrupted = (callId: string): Item =>
  expect.objectContaining({ type: 'tool_result', callId, interrupted: true, isError: true });

describe('marbles: parallel pool (row 7)', () => {
  it('never runs more than maxConcurrency calls; a freed slot starts the next call one hop later', () => {
    ts.run(({ cold, expectSubscriptions }) => {
      const a = cold('--x|', { x: 'A' });
      const b = cold('------x|', { x: 'B' });
      const c = cold('--x|', { x: 'C' });
      const { model, agent } = setup({ a, b, c }, 2);
      const { log } = observe(run(agent, 'go', { idGenerator: sequentialIds() }));
      ts.flush();
      expect(log).toEqual([
        '0 run_started',
        '0 turn_started',
        '0 model_request_started',
        '1 model_response_completed',
        '1 tool_call_started:a',
        '1 tool_call_started:b',
        '4 tool_call_completed:a',
        '4 tool_call_started:c',
        '7 tool_call_completed:c',
        '8 tool_call_completed:b',
        '8 turn_completed',
        '8 turn_started',
        '8 model_request_started',
        '9 text_delta',
        '9 model_response_completed',
        '9 turn_completed',
        '9 run_completed',
      ]);
      expectSubscriptions(a.subscriptions).toBe('-^--!');
      expectSubscriptions(b.subscriptions).toBe('-^------!');
      expectSubscriptions(c.subscriptions).toBe('----^--!');
      expect(model.requests).toHaveLength(2);
    });
  });

  it('results enter history in call order although a later call finishes first', () => {
    ts.run(({ cold }) => {
      const slow = cold('-----x|', { x: 'S' });
      const fast = cold('x|', { x: 'F' });
      const { model, agent } = setup({ slow, fast }, 4);
      const { log } = observe(run(agent, 'go', { idGenerator: sequentialIds() }));
      ts.flush();
      expect(log.filter((l) => l.includes('tool_call_completed'))).toEqual([
        '2 tool_call_completed:fast',
        '7 tool_call_completed:slow',
      ]);
      expect(model.requests[1]!.items.slice(-3)).toEqual([
        expect.objectContaining({
          type: 'assistant',
          toolCalls: [expect.objectContaining({ callId: 'slow' }), expect.objectContaining({ callId: 'fast' })],
        }),
        result('slow', 'S'),
        result('fast', 'F'),
      ]);
    });
  });

  it('tie, cancel scheduled first in the frame a finishes: a is torn down unfinished, c never starts', () => {
    ts.run(({ cold, expectSubscriptions }) => {
      const a = cold('--x|', { x: 'A' });
      const b = cold('------x|', { x: 'B' });
      const c = cold('--x|', { x: 'C' });
      const { model, agent } = setup({ a, b, c }, 2);
      const cancel = new CancelSignal();
      ts.schedule(() => cancel.cancel('x'), 4); // created before a's completion action
      const { log, events } = observe(run(agent, 'go', { cancel, idGenerator: sequentialIds() }));
      ts.flush();
      expect(log.slice(4)).toEqual(['1 tool_call_started:a', '1 tool_call_started:b', '4 run_cancelled:tool_call']);
      expectSubscriptions(a.subscriptions).toBe('-^--!');
      expectSubscriptions(b.subscriptions).toBe('-^--!');
      expectSubscriptions(c.subscriptions).toBe([]);
      const terminal = events.at(-1) as RunCancelled;
      expect(terminal.partial.slice(2)).toEqual([interrupted('a'), interrupted('b'), interrupted('c')]);
      expect(model.requests).toHaveLength(1);
    });
  });

  for (const how of ['synchronously in the handler', 'scheduled from the handler'] as const) {
    it(`tie, cancel raised after a's completion in the same frame (${how}): a keeps its result, c never starts`, () => {
      ts.run(({ cold, expectSubscriptions }) => {
        const a = cold('--x|', { x: 'A' });
        const b = cold('------x|', { x: 'B' });
        const c = cold('--x|', { x: 'C' });
        const { model, agent } = setup({ a, b, c }, 2);
        const cancel = new CancelSignal();
        const { log, events } = observe(run(agent, 'go', { cancel, idGenerator: sequentialIds() }), (e) => {
          if (e.type !== 'tool_call_completed' || e.name !== 'a') return;
          if (how === 'synchronously in the handler') cancel.cancel('x');
          else ts.schedule(() => cancel.cancel('x'), 0);
        });
        ts.flush();
        // a's call is over but b still runs: the cancel tears b down (phase tool_call) and c never starts.
        expect(log.slice(4)).toEqual([
          '1 tool_call_started:a',
          '1 tool_call_started:b',
          '4 tool_call_completed:a',
          '4 run_cancelled:tool_call',
        ]);
        expectSubscriptions(a.subscriptions).toBe('-^--!');
        expectSubscriptions(b.subscriptions).toBe('-^--!');
        expectSubscriptions(c.subscriptions).toBe([]);
        const terminal = events.at(-1) as RunCancelled;
        expect(terminal.partial.slice(2)).toEqual([result('a', 'A'), interrupted('b'), interrupted('c')]);
        expect(model.requests).toHaveLength(1);
      });
    });
  }

  for (const order of ['cancel scheduled first', 'cancel raised after the completion'] as const) {
    it(`tie at a wave boundary with nothing running (maxConcurrency 1, ${order}): b never starts`, () => {
      ts.run(({ cold, expectSubscriptions }) => {
        const a = cold('--x|', { x: 'A' });
        const b = cold('x|', { x: 'B' });
        const { agent } = setup({ a, b }, 1);
        const cancel = new CancelSignal();
        if (order === 'cancel scheduled first') ts.schedule(() => cancel.cancel('x'), 4);
        const { log, events } = observe(run(agent, 'go', { cancel, idGenerator: sequentialIds() }), (e) => {
          if (order !== 'cancel scheduled first' && e.type === 'tool_call_completed')
            ts.schedule(() => cancel.cancel('x'), 0);
        });
        ts.flush();
        const tail =
          order === 'cancel scheduled first'
            ? ['4 run_cancelled:tool_call']
            : ['4 tool_call_completed:a', '4 run_cancelled:wave_boundary'];
        expect(log.slice(4)).toEqual(['1 tool_call_started:a', ...tail]);
        expectSubscriptions(a.subscriptions).toBe('-^--!');
        expectSubscriptions(b.subscriptions).toBe([]);
        const partial = (events.at(-1) as RunCancelled).partial.slice(2);
        expect(partial).toEqual([
          order === 'cancel scheduled first' ? interrupted('a') : result('a', 'A'),
          interrupted('b'),
        ]);
      });
    });
  }

  it('maxConcurrency 1 behaves as a queue: the next call starts only after the previous one', () => {
    ts.run(({ cold, expectSubscriptions }) => {
      const a = cold('-x|', { x: 'A' });
      const b = cold('-x|', { x: 'B' });
      const { agent } = setup({ a, b }, 1);
      const { log } = observe(run(agent, 'go', { idGenerator: sequentialIds() }));
      ts.flush();
      expectSubscriptions(a.subscriptions).toBe('-^-!');
      expectSubscriptions(b.subscriptions).toBe('---^-!');
      expect(log.at(-1)).toBe('6 run_completed');
    });
  });
});
