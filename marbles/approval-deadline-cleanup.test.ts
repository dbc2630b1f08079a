import { TestScheduler } from 'rxjs/testing';
import { z } from 'zod';
import { beforeEach, describe, expect, it } from 'vitest';
import { defineAgent, tool, RunControl, run, type RunEvent } from '../src/index.js';
import { eventLabel, scriptedModel, sequentialIds } from '../src/testing/index.js';

/**
 * Guarantee 11 (nothing of the run left when its terminal event is out) when the run's last wait is an approval
 * that ends synchronously: a sequential batch of two calls that need approval, the second cancelled with
 * `cancelToolCall` while the first still awaits its decision (its `tool_call_failed` goes out at once, its wait has
 * not begun). The first call's approval deadline (6 frames) expires; the second call's wait then begins, finds
 * its verdict already given and ends at once, which ends the batch, the turn and the run (`maxTurns: 1`) in the
 * same frame. Its approval deadline, scheduled as its wait began, must be gone before the terminal event.
 */
let ts: TestScheduler;
beforeEach(() => {
  ts = new TestScheduler((actual, expected) => expect(actual).toEqual(expected));
});

describe('marbles: an approval wait that ends synchronously at the run end', () => {
  it('a call cancelled before its approval wait began: its deadline is cleared before the terminal event', () => {
    ts.run(() => {
      const gated = tool({
        name: 'gated',
        description: 'gated',
        parameters: z.object({}),
        needsApproval: true,
        execute: () => 'ran',
      });
      const model = scriptedModel([
        {
          toolCalls: [
            { name: 'gated', callId: 'a' },
            { name: 'gated', callId: 'b' },
          ],
          delayMs: 0,
        },
      ]);
      const agent = defineAgent({ name: 'p', instructions: '', model, tools: [gated], maxTurns: 1 });
      const control = new RunControl();
      const log: string[] = [];
      let actionsAtTerminal = -1;
      run(agent, 'go', {
        control,
        deadlines: { approvalMs: 6 },
        scheduler: ts,
        idGenerator: sequentialIds(),
      }).subscribe((e: RunEvent) => {
        log.push(`${ts.now()} ${eventLabel(e)}`);
        if (e.type === 'run_failed' || e.type === 'run_completed' || e.type === 'run_cancelled') {
          actionsAtTerminal = ts.actions.length;
        }
      });
      ts.schedule(() => void log.push(`1 cancelToolCall b: ${control.cancelToolCall('b', 'not this one')}`), 1);
      ts.flush();
      expect(log).toEqual([
        '0 run_started',
        '0 turn_started',
        '0 model_request_started',
        '0 model_response_completed',
        '0 tool_approval_requested',
        '0 tool_approval_requested',
        '1 tool_call_failed:gated',
        '1 cancelToolCall b: true',
        '6 tool_call_failed:gated',
        '6 turn_completed',
        '6 run_failed:max_turns',
      ]);
      expect(actionsAtTerminal).toBe(0);
      expect(ts.actions).toEqual([]);
    });
  });
});
