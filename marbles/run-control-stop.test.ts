import type { Observable } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  CancelSignal,
  Mailbox,
  MemorySession,
  RunControl,
  defineAgent,
  run,
  tool,
  type Item,
  type RunEvent,
} from '../src/index.js';
import { scriptedModel, sequentialIds, type ScriptedStep } from '../src/testing/index.js';
import { observe as observeRun } from './support/observe.js';

/**
 * Graceful stop (docs/run-control.md, "Stop") in virtual time: a stop at each boundary, the final
 * answer under a stop, steering under a stop, the tie with a cancel in both orders (cancel wins), and
 * the escalation after `graceMs`. Timeline entries are `frame label`; the first model response comes at
 * frame 2 (text 'working', calls a then b, sequential), the second at frame 2 after its request.
 */
let ts: TestScheduler;
beforeEach(() => {
  ts = new TestScheduler((actual, expected) => expect(actual).toEqual(expected));
});

function setup(
  colds: Record<string, Observable<string>>,
  opts: { steps?: ScriptedStep[]; parallel?: number; maxTurns?: number } = {},
) {
  const names = Object.keys(colds);
  const hookCalls: string[] = [];
  const tools = names.map((name) =>
    tool({ name, description: name, parameters: z.object({}), execute: () => colds[name]! }),
  );
  const steps = opts.steps ?? [
    { text: 'working', toolCalls: names.map((name) => ({ name, callId: name })), delayMs: 2 },
    { text: 'done', delayMs: 2 },
  ];
  const model = scriptedModel(steps);
  const agent = defineAgent({
    name: 'stop',
    instructions: '',
    model,
    tools,
    hooks: { beforeToolCall: ({ call }) => void hookCalls.push(call.name) },
    ...(opts.parallel ? { parallelToolCalls: { maxConcurrency: opts.parallel } } : {}),
    ...(opts.maxTurns ? { maxTurns: opts.maxTurns } : {}),
  });
  const control = new RunControl();
  const session = new MemorySession();
  return { model, agent, control, session, hookCalls };
}

function observe(events$: Observable<RunEvent>, onEvent?: (e: RunEvent) => void) {
  const observed = observeRun(ts, events$, onEvent);
  return { ...observed, terminal: () => observed.events.at(-1)! };
}

const HEAD = [
  '0 run_started',
  '0 turn_started',
  '0 model_request_started',
  '2 text_delta',
  '2 model_response_completed',
];
const user = (text: string): Item => ({ type: 'user', id: 'item-1', text });
const result = (callId: string, output: string, isError = false): Item => ({
  type: 'tool_result',
  callId,
  output,
  isError,
});

describe('marbles: stop at turn_end', () => {
  it('requested while the model streams: every call of the turn runs, then the run ends stopped and commits', () => {
    ts.run(({ cold, expectSubscriptions }) => {
      const a = cold('--x|', { x: 'A' });
      const b = cold('-x|', { x: 'B' });
      const { model, agent, control, session } = setup({ a, b });
      const taken: boolean[] = [];
      ts.schedule(() => taken.push(control.stop({ at: 'turn_end' })), 1);
      ts.schedule(() => taken.push(control.stop({ at: 'tool_call_end' })), 3); // the first stop stands
      const { log, terminal } = observe(run(agent, 'go', { control, session, idGenerator: sequentialIds() }));
      ts.flush();
      expect(log).toEqual([
        '0 run_started',
        '0 turn_started',
        '0 model_request_started',
        '1 stop_requested',
        '2 text_delta',
        '2 model_response_completed',
        '2 tool_call_started:a',
        '5 tool_call_completed:a',
        '5 tool_call_started:b',
        '7 tool_call_completed:b',
        '7 turn_completed',
        '7 run_completed',
      ]);
      expect(taken).toEqual([true, false]);
      expectSubscriptions(a.subscriptions).toBe('--^--!');
      expectSubscriptions(b.subscriptions).toBe('-----^-!');
      expect(model.requests).toHaveLength(1); // no further model request
      expect(terminal()).toMatchObject({
        type: 'run_completed',
        stopReason: 'stopped',
        output: 'working',
        finishReason: 'tool_calls',
        undelivered: [],
      });
      expect(session.items.map((i) => i.type)).toEqual(['user', 'assistant', 'tool_result', 'tool_result']);
      expect(session.items.slice(2)).toEqual([result('a', 'A'), result('b', 'B')]);
    });
  });

  it('stop_requested carries the boundary (stopAt) and graceMs when given, once', () => {
    ts.run(({ cold }) => {
      const a = cold('--x|', { x: 'A' });
      const { agent, control } = setup({ a });
      ts.schedule(() => control.stop({ at: 'turn_end', graceMs: 50 }), 1);
      const { events } = observe(run(agent, 'go', { control }));
      ts.flush();
      const stops = events.filter((e) => e.type === 'stop_requested');
      expect(stops).toEqual([
        expect.objectContaining({ type: 'stop_requested', stopAt: 'turn_end', graceMs: 50, at: 1 }),
      ]);
      expect(control.stop()).toBe(false); // the run has ended
    });
  });

  it('requested before the first turn (from the run_started handler): no turn starts, output empty', () => {
    ts.run(() => {
      const { model, agent, control, session } = setup({});
      const { log, terminal } = observe(run(agent, 'go', { control, session, idGenerator: sequentialIds() }), (e) => {
        if (e.type === 'run_started') control.stop();
      });
      ts.flush();
      expect(log).toEqual(['0 run_started', '0 stop_requested', '0 run_completed']);
      expect(terminal()).toMatchObject({ stopReason: 'stopped', output: '', finishReason: 'stop' });
      expect(model.requests).toHaveLength(0);
      expect(session.items).toEqual([user('go')]); // the consistent history it had: its input
    });
  });

  it('requested while the final answer streams: the answer finishes and the run ends completed', () => {
    ts.run(({ cold }) => {
      const a = cold('x|', { x: 'A' });
      const { model, agent, control, session } = setup({ a });
      ts.schedule(() => control.stop(), 4); // the second request was sent at frame 2, answers at 4+
      const { log, terminal } = observe(run(agent, 'go', { control, session }));
      ts.flush();
      expect(log.slice(-6)).toEqual([
        '3 model_request_started',
        '4 stop_requested',
        '5 text_delta',
        '5 model_response_completed',
        '5 turn_completed',
        '5 run_completed',
      ]);
      expect(terminal()).toMatchObject({
        type: 'run_completed',
        stopReason: 'completed',
        output: 'done',
        finishReason: 'stop',
      });
      expect(model.requests).toHaveLength(2);
      expect(session.items.at(-1)).toMatchObject({ type: 'assistant', text: 'done' });
    });
  });

  it('steering pending under a stop starts no turn: it stays queued and is listed in undelivered', () => {
    ts.run(({ cold }) => {
      const a = cold('--x|', { x: 'A' });
      const { model, agent, control, session } = setup({ a });
      const mailbox = new Mailbox({ idGenerator: () => 'steer-1' });
      ts.schedule(() => mailbox.push('also check b'), 1);
      ts.schedule(() => control.stop(), 3);
      const { terminal } = observe(run(agent, 'go', { control, session, mailbox }));
      ts.flush();
      expect(terminal()).toMatchObject({
        type: 'run_completed',
        stopReason: 'stopped',
        undelivered: [{ id: 'steer-1', content: 'also check b' }],
      });
      expect(mailbox.peek().map((t) => t.content)).toEqual(['also check b']);
      expect(model.requests).toHaveLength(1);
    });
  });

  it('steering pending when a stop comes during the final answer stays queued too; the run ends completed', () => {
    ts.run(() => {
      const { model, agent, control } = setup({}, { steps: [{ text: 'answer', delayMs: 3 }, { text: 'never' }] });
      const mailbox = new Mailbox({ idGenerator: () => 'steer-1' });
      ts.schedule(() => mailbox.push('one more thing'), 1);
      ts.schedule(() => control.stop(), 2);
      const { terminal } = observe(run(agent, 'go', { control, mailbox }));
      ts.flush();
      expect(terminal()).toMatchObject({ stopReason: 'completed', output: 'answer', undelivered: [{ id: 'steer-1' }] });
      expect(model.requests).toHaveLength(1);
    });
  });
});

describe('marbles: stop and maxTurns', () => {
  it('a turn that ends at the limit under a stop ends the run stopped, not max_turns', () => {
    ts.run(({ cold }) => {
      const a = cold('--x|', { x: 'A' });
      const { agent, control, session } = setup({ a }, { maxTurns: 1 });
      ts.schedule(() => control.stop(), 3);
      const { log, terminal } = observe(run(agent, 'go', { control, session }));
      ts.flush();
      expect(log.slice(-3)).toEqual(['5 tool_call_completed:a', '5 turn_completed', '5 run_completed']);
      expect(terminal()).toMatchObject({ stopReason: 'stopped' });
      expect(session.writes).toBe(1);
    });
  });
});

describe('marbles: stop at tool_call_end', () => {
  it('requested while a call runs: it finishes, the next never starts and is paired "not run"', () => {
    ts.run(({ cold, expectSubscriptions }) => {
      const a = cold('--x|', { x: 'A' });
      const b = cold('-x|', { x: 'B' });
      const { model, agent, control, session, hookCalls } = setup({ a, b });
      ts.schedule(() => control.stop({ at: 'tool_call_end' }), 3);
      const { log, terminal, events } = observe(run(agent, 'go', { control, session, idGenerator: sequentialIds() }));
      ts.flush();
      expect(log).toEqual([
        ...HEAD,
        '2 tool_call_started:a',
        '3 stop_requested',
        '5 tool_call_completed:a',
        '5 tool_call_failed:b',
        '5 turn_completed',
        '5 run_completed',
      ]);
      expectSubscriptions(b.subscriptions).toBe([]);
      expect(hookCalls).toEqual(['a', 'b']); // both prepared before the stop
      const failed = events.find((e) => e.type === 'tool_call_failed');
      expect(failed).toMatchObject({
        callId: 'b',
        interrupted: false,
        error: { name: 'ToolCallNotRunError', message: 'not run: the run was stopped' },
      });
      expect(terminal()).toMatchObject({ stopReason: 'stopped', output: 'working', finishReason: 'tool_calls' });
      expect(session.items.slice(2)).toEqual([
        result('a', 'A'),
        result('b', 'Error: not run: the run was stopped', true),
      ]);
      expect(model.requests).toHaveLength(1);
    });
  });

  it('requested while the model streams: no call of the response starts and no beforeToolCall hook runs', () => {
    ts.run(({ cold, expectSubscriptions }) => {
      const a = cold('x|', { x: 'A' });
      const b = cold('x|', { x: 'B' });
      const { agent, control, session, hookCalls } = setup({ a, b });
      ts.schedule(() => control.stop({ at: 'tool_call_end' }), 1);
      const { log, terminal } = observe(run(agent, 'go', { control, session }));
      ts.flush();
      expect(log.slice(5)).toEqual([
        '2 model_response_completed',
        '2 tool_call_failed:a',
        '2 tool_call_failed:b',
        '2 turn_completed',
        '2 run_completed',
      ]);
      expect(hookCalls).toEqual([]);
      expectSubscriptions(a.subscriptions).toBe([]);
      expect(terminal()).toMatchObject({ stopReason: 'stopped' });
      expect(session.items.filter((i) => i.type === 'tool_result')).toHaveLength(2);
    });
  });

  it('a parallel batch: running calls finish, queued ones are paired "not run"', () => {
    ts.run(({ cold, expectSubscriptions }) => {
      const a = cold('--x|', { x: 'A' });
      const b = cold('----x|', { x: 'B' });
      const c = cold('x|', { x: 'C' });
      const { agent, control } = setup({ a, b, c }, { parallel: 2 });
      ts.schedule(() => control.stop({ at: 'tool_call_end' }), 3);
      const { log, terminal } = observe(run(agent, 'go', { control }));
      ts.flush();
      expect(log.slice(5)).toEqual([
        '2 tool_call_started:a',
        '2 tool_call_started:b',
        '3 stop_requested',
        '5 tool_call_completed:a',
        '5 tool_call_failed:c',
        '7 tool_call_completed:b',
        '7 turn_completed',
        '7 run_completed',
      ]);
      expectSubscriptions(c.subscriptions).toBe([]);
      expect(terminal()).toMatchObject({ stopReason: 'stopped' });
    });
  });
});

describe('marbles: cancel beats stop in a tie', () => {
  for (const order of ['stop first', 'cancel first'] as const) {
    it(`stop and cancel in the same frame (${order}): the run is cancelled`, () => {
      ts.run(({ cold }) => {
        const a = cold('-----x|', { x: 'A' });
        const { agent, control, session } = setup({ a });
        const cancel = new CancelSignal();
        const taken: boolean[] = [];
        if (order === 'stop first') {
          ts.schedule(() => taken.push(control.stop()), 3);
          ts.schedule(() => cancel.cancel('now'), 3);
        } else {
          ts.schedule(() => cancel.cancel('now'), 3);
          ts.schedule(() => taken.push(control.stop()), 3);
        }
        const { log, terminal } = observe(run(agent, 'go', { control, cancel, session }));
        ts.flush();
        expect(terminal()).toMatchObject({ type: 'run_cancelled', reason: 'now', phase: 'tool_call' });
        expect(taken).toEqual([order === 'stop first']);
        expect(log.filter((l) => l.endsWith('stop_requested'))).toHaveLength(order === 'stop first' ? 1 : 0);
        expect(session.writes).toBe(0);
      });
    });

    it(`a cancel in the frame the stop's boundary is reached (${order === 'stop first' ? 'completion' : 'cancel'} scheduled first): cancelled`, () => {
      ts.run(({ cold }) => {
        const a = cold('--(x|)', { x: 'A' }); // subscribed at 2, completes at 4: the turn's end
        const { agent, control, session, model } = setup({ a });
        const cancel = new CancelSignal();
        ts.schedule(() => control.stop(), 1);
        if (order === 'cancel first') ts.schedule(() => cancel.cancel('now'), 4);
        else ts.schedule(() => ts.schedule(() => cancel.cancel('now'), 1), 3);
        const { log, terminal } = observe(run(agent, 'go', { control, cancel, session }));
        ts.flush();
        if (order === 'cancel first') expect(log.slice(-1)).toEqual(['4 run_cancelled:tool_call']);
        else
          expect(log.slice(-3)).toEqual(['4 tool_call_completed:a', '4 turn_completed', '4 run_cancelled:turn_entry']);
        expect(terminal()).toMatchObject({ type: 'run_cancelled', reason: 'now' });
        expect(session.writes).toBe(0);
        expect(model.requests).toHaveLength(1);
      });
    });
  }

  it('a cancel raised in the handler of the turn_completed that reaches the boundary wins', () => {
    ts.run(({ cold }) => {
      const a = cold('--(x|)', { x: 'A' });
      const { agent, control, session } = setup({ a });
      const cancel = new CancelSignal();
      ts.schedule(() => control.stop(), 1);
      const { terminal } = observe(run(agent, 'go', { control, cancel, session }), (e) => {
        if (e.type === 'turn_completed') cancel.cancel('handler');
      });
      ts.flush();
      expect(terminal()).toMatchObject({ type: 'run_cancelled', reason: 'handler', phase: 'turn_entry' });
      expect(session.writes).toBe(0);
    });
  });
});

describe('marbles: stop escalation after graceMs', () => {
  it('a call that outlasts graceMs: the run is cancelled with { type: "stop_timeout", graceMs } at tool_call', () => {
    ts.run(({ cold, expectSubscriptions }) => {
      const a = cold('----------x|', { x: 'A' });
      const { agent, control, session } = setup({ a });
      ts.schedule(() => control.stop({ at: 'tool_call_end', graceMs: 3 }), 4);
      const { log, terminal } = observe(run(agent, 'go', { control, session }));
      ts.flush();
      expect(log.slice(-2)).toEqual(['4 stop_requested', '7 run_cancelled:tool_call']);
      expect(terminal()).toMatchObject({ type: 'run_cancelled', reason: { type: 'stop_timeout', graceMs: 3 } });
      expectSubscriptions(a.subscriptions).toBe('--^----!');
      expect(session.writes).toBe(0);
    });
  });

  it('a model stream that outlasts graceMs: cancelled at model_stream', () => {
    ts.run(() => {
      const { agent, control } = setup({}, { steps: [{ text: ['a', 'b', 'c'], delayMs: 1, deltaDelayMs: 4 }] });
      ts.schedule(() => control.stop({ graceMs: 2 }), 2);
      const { log, terminal } = observe(run(agent, 'go', { control }));
      ts.flush();
      expect(log.slice(-1)).toEqual(['4 run_cancelled:model_stream']);
      expect(terminal()).toMatchObject({ reason: { type: 'stop_timeout', graceMs: 2 } });
    });
  });

  it('a boundary reached within graceMs: stopped, and the grace timer is gone with the run', () => {
    ts.run(({ cold }) => {
      const a = cold('--x|', { x: 'A' });
      const { agent, control } = setup({ a });
      ts.schedule(() => control.stop({ graceMs: 100 }), 1);
      let pending = -1;
      const { terminal } = observe(run(agent, 'go', { control }), (e) => {
        if (e.type === 'run_completed') pending = ts.actions.length;
      });
      ts.flush();
      expect(terminal()).toMatchObject({ type: 'run_completed', stopReason: 'stopped' });
      expect(pending).toBe(0);
      expect(ts.now()).toBe(5);
    });
  });
});
