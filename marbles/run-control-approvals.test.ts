import { TestScheduler } from 'rxjs/testing';
import { z } from 'zod';
import { beforeEach, describe, expect, it } from 'vitest';
import {
  CancelSignal,
  defineAgent,
  tool,
  MemorySession,
  RunControl,
  run,
  type RunCancelled,
  type RunCompleted,
  type RunEvent,
  type ToolCallFailed,
} from '../src/index.js';
import { eventLabel, scriptedModel, sequentialIds } from '../src/testing/index.js';
import { gatedAgent } from './support/gated-agent.js';

/**
 * Run control joined (docs/run-control.md): a stop while a call awaits approval ("Stop and approvals")
 * and `cancelToolCall` on a call awaiting approval ("Per-call cancel"). The model asks at frame 1 for
 * `gated` (needsApproval; runs 3 frames once approved) and, in the parallel rows, `free` (no approval;
 * runs 6 frames) in the same batch; its second response ('done') comes 1 frame after its request.
 */
let ts: TestScheduler;
beforeEach(() => {
  ts = new TestScheduler((actual, expected) => expect(actual).toEqual(expected));
});

function setup(options: { parallel?: boolean } = {}) {
  const { agent, model, started } = gatedAgent(ts, options);
  const cancel = new CancelSignal();
  const control = new RunControl();
  const session = new MemorySession();
  const log: string[] = [];
  const events: RunEvent[] = [];
  const deadlines = { approvalMs: 1_000 };
  run(agent, 'go', { cancel, control, session, deadlines, scheduler: ts, idGenerator: sequentialIds() }).subscribe(
    (e) => {
      events.push(e);
      log.push(`${ts.now()} ${eventLabel(e)}`);
    },
  );
  const failed = (callId: string) =>
    events.find((e): e is ToolCallFailed => e.type === 'tool_call_failed' && e.callId === callId);
  return { cancel, control, session, log, events, started, model, failed, terminal: () => events.at(-1)! };
}

const HEAD = ['0 run_started', '0 turn_started', '0 model_request_started', '1 model_response_completed'];

describe('marbles: a stop while a call awaits approval', () => {
  it('with graceMs: the grace expires first, the run is cancelled stop_timeout at phase approval', () => {
    ts.run(() => {
      const s = setup();
      ts.schedule(() => void s.control.stop({ at: 'turn_end', graceMs: 5 }), 3);
      ts.flush();
      expect(s.log).toEqual([...HEAD, '1 tool_approval_requested', '3 stop_requested', '8 run_cancelled:approval']);
      const terminal = s.terminal() as RunCancelled;
      expect(terminal.reason).toEqual({ type: 'stop_timeout', graceMs: 5 });
      expect(terminal.partial.at(-1)).toMatchObject({ type: 'tool_result', callId: 'g', interrupted: true });
      expect(s.started).toEqual([]);
      expect(s.control.approve('g')).toBe(false); // the run has ended
      expect(s.session.items).toEqual([]); // a cancelled run commits nothing
      expect(ts.actions).toEqual([]); // the approval deadline is gone with the run
    });
  });

  it('at turn_end without graceMs: the stop waits for the decision; the call runs; the run ends stopped', () => {
    ts.run(() => {
      const s = setup();
      ts.schedule(() => void s.control.stop({ at: 'turn_end' }), 3);
      ts.schedule(() => void s.control.approve('g'), 20);
      ts.flush();
      expect(s.log).toEqual([
        ...HEAD,
        '1 tool_approval_requested',
        '3 stop_requested',
        '20 tool_call_started:gated',
        '23 tool_call_completed:gated',
        '23 turn_completed',
        '23 run_completed',
      ]);
      expect(s.terminal()).toMatchObject({ type: 'run_completed', stopReason: 'stopped', output: '' });
      expect(s.model.requests).toHaveLength(1); // no further model request under the stop
      expect(s.session.items.at(-1)).toEqual({ type: 'tool_result', callId: 'g', output: 'G', isError: false });
    });
  });

  it('at tool_call_end without graceMs: the stop waits; the approved call is paired "not run", never started', () => {
    ts.run(() => {
      const s = setup();
      ts.schedule(() => void s.control.stop({ at: 'tool_call_end' }), 3);
      ts.schedule(() => void s.control.approve('g'), 20);
      ts.flush();
      expect(s.log).toEqual([
        ...HEAD,
        '1 tool_approval_requested',
        '3 stop_requested',
        '20 tool_call_failed:gated',
        '20 turn_completed',
        '20 run_completed',
      ]);
      expect(s.failed('g')).toMatchObject({
        interrupted: false,
        error: { name: 'ToolCallNotRunError', message: 'not run: the run was stopped' },
      });
      expect(s.started).toEqual([]);
      expect((s.terminal() as RunCompleted).stopReason).toBe('stopped');
    });
  });

  it('at tool_call_end: a rejection ends the wait with ToolCallRejectedError, then the run ends stopped', () => {
    ts.run(() => {
      const s = setup();
      ts.schedule(() => void s.control.stop({ at: 'tool_call_end' }), 3);
      ts.schedule(() => void s.control.reject('g', 'no'), 6);
      ts.flush();
      expect(s.log.slice(-3)).toEqual(['6 tool_call_failed:gated', '6 turn_completed', '6 run_completed']);
      expect(s.failed('g')).toMatchObject({ error: { name: 'ToolCallRejectedError' } });
      expect((s.terminal() as RunCompleted).stopReason).toBe('stopped');
    });
  });
});

describe('marbles: cancelToolCall on a call awaiting approval', () => {
  it('true; tool_call_failed (interrupted, ToolCallCancelledError) is out before it returns; siblings go on', () => {
    ts.run(() => {
      const s = setup({ parallel: true });
      let answered: boolean | undefined;
      let seenBeforeReturn: ToolCallFailed | undefined;
      ts.schedule(() => {
        answered = s.control.cancelToolCall('g', 'too slow');
        seenBeforeReturn = s.failed('g');
        expect(s.control.approve('g')).toBe(false); // settled already
        expect(s.control.cancelToolCall('g')).toBe(false);
      }, 3);
      ts.flush();
      expect(answered).toBe(true);
      expect(seenBeforeReturn).toMatchObject({
        at: 3,
        interrupted: true,
        error: {
          name: 'ToolCallCancelledError',
          message: 'cancelled by the user: too slow',
          callId: 'g',
          toolName: 'gated',
        },
      });
      expect(s.log).toEqual([
        ...HEAD,
        '1 tool_approval_requested',
        '1 tool_call_started:free',
        '3 tool_call_failed:gated',
        '7 tool_call_completed:free',
        '7 turn_completed',
        '7 turn_started',
        '7 model_request_started',
        '8 text_delta',
        '8 model_response_completed',
        '8 turn_completed',
        '8 run_completed',
      ]);
      expect(s.started).toEqual(['free']);
      const results = s.model.requests[1]!.items.filter((i) => i.type === 'tool_result');
      expect(results).toEqual([
        {
          type: 'tool_result',
          callId: 'g',
          output: 'Error: cancelled by the user: too slow',
          isError: true,
          interrupted: true,
        },
        { type: 'tool_result', callId: 'f', output: 'F', isError: false },
      ]);
      expect(s.terminal()).toMatchObject({ type: 'run_completed', stopReason: 'completed', output: 'done' });
    });
  });

  it('in a sequential batch, a later call awaiting approval: its tool_call_failed is out before it returns too', () => {
    ts.run(() => {
      const control = new RunControl();
      const gated = tool({
        name: 'gated',
        description: 'gated',
        parameters: z.object({}),
        needsApproval: true,
        execute: () => ts.createColdObservable('---x|', { x: 'G' }),
      });
      const calls = [
        { name: 'gated', callId: 'g1' },
        { name: 'gated', callId: 'g2' },
      ];
      const model = scriptedModel([
        { toolCalls: calls, delayMs: 1 },
        { text: 'done', delayMs: 1 },
      ]);
      const agent = defineAgent({ name: 'a', instructions: '', model, tools: [gated] });
      const log: string[] = [];
      run(agent, 'go', { control, scheduler: ts, idGenerator: sequentialIds() }).subscribe((e) => {
        log.push(`${ts.now()} ${eventLabel(e)}${'callId' in e ? `:${e.callId}` : ''}`);
      });
      let before: string[] = [];
      ts.schedule(() => control.approve('g1'), 2);
      ts.schedule(() => {
        expect(control.cancelToolCall('g2', 'later')).toBe(true);
        before = [...log];
        expect(control.approve('g2')).toBe(false);
      }, 3);
      ts.flush();
      expect(before.at(-1)).toBe('3 tool_call_failed:gated:g2');
      expect(log).toEqual([
        ...HEAD,
        '1 tool_approval_requested:g1',
        '1 tool_approval_requested:g2',
        '2 tool_call_started:gated:g1',
        '3 tool_call_failed:gated:g2',
        '6 tool_call_completed:gated:g1',
        '6 turn_completed',
        '6 turn_started',
        '6 model_request_started',
        '7 text_delta',
        '7 model_response_completed',
        '7 turn_completed',
        '7 run_completed',
      ]);
      // The model reads the results in call order.
      expect(model.requests[1]!.items.filter((i) => i.type === 'tool_result')).toEqual([
        { type: 'tool_result', callId: 'g1', output: 'G', isError: false },
        {
          type: 'tool_result',
          callId: 'g2',
          output: 'Error: cancelled by the user: later',
          isError: true,
          interrupted: true,
        },
      ]);
    });
  });

  it('cancelAwaitingApproval reaches only a call awaiting approval; false for every call once the run ended', () => {
    ts.run(() => {
      const s = setup({ parallel: true });
      ts.schedule(() => {
        expect(s.control.cancelAwaitingApproval('f', 'x')).toBe(false); // running, not awaiting approval
        expect(s.control.cancelAwaitingApproval('g', 'x')).toBe(true);
      }, 2);
      ts.flush();
      expect(s.failed('g')).toMatchObject({ at: 2, interrupted: true, error: { name: 'ToolCallCancelledError' } });
      expect(s.terminal().type).toBe('run_completed');
      expect(s.control.cancelToolCall('g')).toBe(false);
    });
  });

  it('a run cancel then cancelToolCall in the same frame: the cancel wins, the per-call cancel answers false', () => {
    ts.run(() => {
      const s = setup();
      let answered: boolean | undefined;
      ts.schedule(() => s.cancel.cancel('stop'), 3);
      ts.schedule(() => void (answered = s.control.cancelToolCall('g')), 3);
      ts.flush();
      expect(answered).toBe(false);
      expect(s.log.at(-1)).toBe('3 run_cancelled:approval');
      expect(s.failed('g')).toBeUndefined();
    });
  });
});
