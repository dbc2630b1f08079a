import type { AGUIEvent } from '@ag-ui/core';
import { describe, expect, it } from 'vitest';
import { AgUiMapper } from '../src/ag-ui/mapper.js';
import type { ToolCallFailed } from '../src/events.js';
import { initialState, reduce } from '../src/web/state.js';
import { TOOL_STATUS_WORDS } from '../src/web/wording.js';

/**
 * Outcomes are typed, not worded (docs/run-control.md, "Outcomes"): a rejection, an expired approval
 * request and cancelToolCall carry distinct `outcome` values on the event, in the AG-UI result's metadata
 * and on the page's card, whatever the error's words say.
 */
const failed = (outcome: ToolCallFailed['outcome'], name: string, message: string): ToolCallFailed => ({
  type: 'tool_call_failed',
  runId: 'r1',
  seq: 5,
  turn: 1,
  at: 1000,
  callId: 'c1',
  name: 'deploy',
  error: { name, message },
  interrupted: outcome === 'cancelled',
  ...(outcome === undefined ? {} : { outcome }),
});

const cases = [
  ['rejected', 'ToolCallRejectedError', 'the call was rejected: no decision within 10 ms'],
  ['expired', 'ToolApprovalExpiredError', 'the approval request expired unanswered after 10 ms; the call did not run'],
  ['cancelled', 'ToolCallCancelledError', 'cancelled by the user'],
] as const;

describe('typed approval outcomes', () => {
  for (const [outcome, name, message] of cases) {
    it(`${outcome}: the AG-UI result's metadata and the page's card say ${outcome}`, () => {
      const events = new AgUiMapper('t1').map(failed(outcome, name, message));
      const result = events.find((e) => e.type === 'TOOL_CALL_RESULT') as { metadata?: { loopctl?: unknown } };
      expect(result.metadata?.loopctl).toMatchObject({ outcome, error: { name } });
      let s = reduce(initialState('t1'), { type: 'send', id: 'u1', text: 'go' });
      s = reduce(s, { type: 'run', runId: 'r1' });
      s = reduce(s, {
        type: 'frame',
        id: '0',
        event: { type: 'RUN_STARTED', threadId: 't1', runId: 'r1' } as AGUIEvent,
      });
      events.forEach((event, i) => (s = reduce(s, { type: 'frame', id: `5:${i}`, event })));
      const card = s.entries.find((e) => e.kind === 'tool');
      expect(card).toMatchObject({ id: 'c1', status: outcome });
      expect(TOOL_STATUS_WORDS[outcome]).toMatch(/\w/);
    });
  }

  it('a rejection whose reason reads like an expiry is still a rejection', () => {
    const events = new AgUiMapper('t1').map(failed('rejected', 'ToolCallRejectedError', cases[0][2]));
    const result = events.find((e) => e.type === 'TOOL_CALL_RESULT') as { metadata?: { loopctl?: unknown } };
    expect(result.metadata?.loopctl).toMatchObject({ outcome: 'rejected' });
  });

  it('any other tool error has no outcome and reads failed', () => {
    const events = new AgUiMapper('t1').map(failed(undefined, 'ToolExecutionError', 'boom'));
    const result = events.find((e) => e.type === 'TOOL_CALL_RESULT') as { metadata?: { loopctl?: object } };
    expect(result.metadata?.loopctl).not.toHaveProperty('outcome');
  });
});
