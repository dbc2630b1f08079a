import { TestScheduler } from 'rxjs/testing';
import { z } from 'zod';
import { beforeEach, describe, expect, it } from 'vitest';
import {
  CancelSignal,
  defineAgent,
  tool,
  RunControl,
  run,
  type RunCancelled,
  type RunEvent,
  type ToolCallFailed,
} from '../src/index.js';
import { eventLabel, scriptedModel, sequentialIds } from '../src/testing/index.js';
import { gatedAgent } from './support/gated-agent.js';

/**
 * Checkpoint 13: approval ("approvals", docs/run-control.md). The model asks at frame 1 for `gated`
 * (needsApproval) and, in the parallel rows, `free` (no approval) in the same batch. A decision or
 * the deadline (`approvalMs: 10`) ends the wait with one stage: a cancel in the same frame wins in
 * both orders ("cancel wins at a stage start"); the call never starts.
 */
let ts: TestScheduler;
beforeEach(() => {
  ts = new TestScheduler((actual, expected) => expect(actual).toEqual(expected));
});

function setup(options: { parallel?: boolean; approvalMs?: number } = {}) {
  const { agent, model, started } = gatedAgent(ts, options);
  const cancel = new CancelSignal();
  const control = new RunControl();
  const log: string[] = [];
  const events: RunEvent[] = [];
  const deadlines = { approvalMs: options.approvalMs ?? 10 };
  // The run's own scheduler is the TestScheduler (timers and stage hops alike), so the order of actions
  // in one frame is the order they were scheduled in.
  run(agent, 'go', { cancel, control, deadlines, scheduler: ts, idGenerator: sequentialIds() }).subscribe((e) => {
    events.push(e);
    log.push(`${ts.now()} ${eventLabel(e)}`);
  });
  const failed = () => events.find((e): e is ToolCallFailed => e.type === 'tool_call_failed' && e.callId === 'g');
  return { cancel, control, log, events, started, model, failed, terminal: () => events.at(-1)! };
}

describe('marbles: the approval wait (checkpoint 13)', () => {
  it('tool_approval_requested after the response, no tool_call_started before approval; approve starts it', () => {
    ts.run(() => {
      const s = setup();
      let answered: boolean | undefined;
      ts.schedule(() => void (answered = s.control.approve('g')), 5);
      ts.flush();
      expect(answered).toBe(true);
      expect(s.log).toEqual([
        '0 run_started',
        '0 turn_started',
        '0 model_request_started',
        '1 model_response_completed',
        '1 tool_approval_requested',
        '5 tool_call_started:gated',
        '8 tool_call_completed:gated',
        '8 turn_completed',
        '8 turn_started',
        '8 model_request_started',
        '9 text_delta',
        '9 model_response_completed',
        '9 turn_completed',
        '9 run_completed',
      ]);
      expect(s.control.approve('g')).toBe(false); // the run has ended
    });
  });

  it('reject: tool_call_failed (ToolCallRejectedError, the reason given) and the model reads it', () => {
    ts.run(() => {
      const s = setup();
      ts.schedule(() => {
        expect(s.control.reject('g', 'too risky')).toBe(true);
        expect(s.control.approve('g')).toBe(false); // decided already: the first decision wins
      }, 5);
      ts.flush();
      expect(s.started).toEqual([]);
      expect(s.failed()).toMatchObject({
        at: 5,
        interrupted: false,
        error: {
          name: 'ToolCallRejectedError',
          message: 'the call was rejected: too risky',
          callId: 'g',
          toolName: 'gated',
        },
      });
      const result = s.model.requests[1]!.items.find((i) => i.type === 'tool_result');
      const output = 'Error: the call was rejected: too risky';
      expect(result).toEqual({ type: 'tool_result', callId: 'g', output, isError: true });
      expect(s.terminal().type).toBe('run_completed');
    });
  });

  it('deadlines.approvalMs passing expires the call: its own outcome, not a rejection', () => {
    ts.run(() => {
      const s = setup({ approvalMs: 10 });
      ts.flush();
      const message = 'the approval request expired unanswered after 10 ms; the call did not run';
      expect(s.failed()).toMatchObject({
        at: 11,
        outcome: 'expired',
        interrupted: false,
        error: { name: 'ToolApprovalExpiredError', message, timeoutMs: 10, callId: 'g' },
      });
      expect(s.started).toEqual([]);
      expect(s.control.approve('g')).toBe(false);
    });
  });

  it('a cancel during the wait: phase approval, the call paired as interrupted, nothing left scheduled', () => {
    ts.run(() => {
      const s = setup();
      ts.schedule(() => s.cancel.cancel('stop'), 4);
      ts.flush();
      expect(s.log.at(-1)).toBe('4 run_cancelled:approval');
      const terminal = s.terminal() as RunCancelled;
      expect(terminal.partial.at(-1)).toMatchObject({ type: 'tool_result', callId: 'g', interrupted: true });
      expect(s.started).toEqual([]);
      expect(ts.actions).toEqual([]); // the deadline timer is gone
    });
  });

  for (const decision of ['approve', 'reject', 'deadline'] as const) {
    // The deadline (10 ms) is a timer scheduled at frame 1, when the wait began; it fires at frame 11.
    const decide = (s: ReturnType<typeof setup>): boolean | undefined => {
      if (decision === 'approve') return s.control.approve('g');
      if (decision === 'reject') return s.control.reject('g', 'no');
      return undefined;
    };

    it(`tie: ${decision} then cancel in the same frame: cancel wins, phase approval, the call never starts`, () => {
      ts.run(() => {
        const s = setup();
        let answered: boolean | undefined;
        // The decision (or the deadline's timer, made at frame 1) is scheduled before the cancel for frame 11;
        // the decision's stage hop is scheduled when it lands, so after the cancel: the cancel wins there.
        if (decision === 'deadline') ts.schedule(() => ts.schedule(() => s.cancel.cancel('stop'), 9), 2);
        else {
          ts.schedule(() => void (answered = decide(s)), 11);
          ts.schedule(() => s.cancel.cancel('stop'), 11);
        }
        ts.flush();
        expect(s.log.at(-1)).toBe('11 run_cancelled:approval');
        expect(s.started).toEqual([]);
        expect(s.failed()).toBeUndefined(); // the verdict's stage never started
        if (decision !== 'deadline') expect(answered).toBe(true);
      });
    });

    it(`tie: cancel then ${decision} in the same frame: cancel wins, the decision answers false`, () => {
      ts.run(() => {
        const s = setup();
        let answered: boolean | undefined;
        ts.schedule(() => s.cancel.cancel('stop'), 11); // created at frame 0: before the deadline's timer
        ts.schedule(() => void (answered = decide(s)), 11);
        ts.flush();
        expect(s.log.at(-1)).toBe('11 run_cancelled:approval');
        expect(s.started).toEqual([]);
        expect(s.failed()).toBeUndefined();
        if (decision !== 'deadline') expect(answered).toBe(false);
        expect(ts.actions).toEqual([]);
      });
    });
  }

  it('tie: cancel raised after the approval stage started in that frame: the call never starts', () => {
    ts.run(() => {
      const s = setup();
      ts.schedule(() => {
        s.control.approve('g');
        ts.schedule(() => s.cancel.cancel('stop'), 0); // made after the verdict's hop: runs after it
      }, 11);
      ts.flush();
      expect(s.log.at(-1)).toBe('11 run_cancelled:between_tools'); // the call's own stage is next, and never starts
      expect(s.started).toEqual([]);
    });
  });

  it('tie: approve then the deadline in the same frame: the first one settles (approved)', () => {
    ts.run(() => {
      const s = setup({ approvalMs: 10 });
      // Scheduled at frame 0 for frame 11, before the deadline timer (scheduled at frame 1): it runs first.
      ts.schedule(() => s.control.approve('g'), 11);
      ts.flush();
      expect(s.started).toEqual(['gated']);
      expect(s.failed()).toBeUndefined();
    });
  });

  it('tie: reject then the deadline in the same frame: the first one settles (rejected, not expired)', () => {
    ts.run(() => {
      const s = setup({ approvalMs: 10 });
      ts.schedule(() => s.control.reject('g', 'no'), 11); // scheduled at frame 0: runs before the deadline timer
      ts.flush();
      expect(s.started).toEqual([]);
      expect(s.failed()).toMatchObject({ at: 11, outcome: 'rejected', error: { name: 'ToolCallRejectedError' } });
    });
  });

  for (const decision of ['approve', 'reject'] as const) {
    it(`tie: the deadline then ${decision} in the same frame: the deadline settles (expired); the decision answers false`, () => {
      ts.run(() => {
        const s = setup({ approvalMs: 10 });
        let answered: boolean | undefined;
        // Scheduled at frame 2 for frame 11: after the deadline timer (scheduled at frame 1).
        ts.schedule(
          () =>
            ts.schedule(() => {
              answered = decision === 'approve' ? s.control.approve('g') : s.control.reject('g', 'no');
            }, 9),
          2,
        );
        ts.flush();
        expect(answered).toBe(false);
        expect(s.started).toEqual([]);
        expect(s.failed()).toMatchObject({ at: 11, outcome: 'expired', error: { name: 'ToolApprovalExpiredError' } });
      });
    });
  }

  it('one pending approval does not hold up the other calls of a parallel batch', () => {
    ts.run(() => {
      const s = setup({ parallel: true, approvalMs: 1_000 });
      ts.schedule(() => s.control.approve('g'), 20);
      ts.flush();
      expect(s.log.slice(3, 10)).toEqual([
        '1 model_response_completed',
        '1 tool_approval_requested',
        '1 tool_call_started:free',
        '7 tool_call_completed:free',
        '20 tool_call_started:gated',
        '23 tool_call_completed:gated',
        '23 turn_completed',
      ]);
    });
  });

  it('a decision from the tool_approval_requested handler counts (the call is opened before the event)', () => {
    ts.run(() => {
      const control = new RunControl();
      const t = tool({
        name: 'gated',
        description: '',
        parameters: z.object({}),
        needsApproval: () => true,
        execute: () => 'G',
      });
      const model = scriptedModel([{ toolCalls: [{ name: 'gated', callId: 'g' }] }, 'ok']);
      const agent = defineAgent({ name: 'a', instructions: '', model, tools: [t] });
      const labels: string[] = [];
      run(agent, 'go', { control, scheduler: ts }).subscribe((e) => {
        labels.push(eventLabel(e));
        if (e.type === 'tool_approval_requested') expect(control.approve(e.callId)).toBe(true);
      });
      ts.flush();
      expect(labels).toContain('tool_call_completed:gated');
      expect(labels.at(-1)).toBe('run_completed');
    });
  });
});
