/**
 * A budget stop in words, wherever a person or a client reads it: the CLI's summary line (the figures, the cost),
 * the AG-UI mapping (RUN_FINISHED's result has stopReason 'budget', the figures and the cost), and the page (an
 * outcome "Stopped: the run reached its budget" with the figures; a budget cancel reason in words).
 */
import { EventType, type AGUIEvent } from '@ag-ui/core';
import { describe, expect, it } from 'vitest';
import { AgUiMapper } from '../src/ag-ui/mapper.js';
import { stopReason } from '../src/cli/render.js';
import { budgetText, costText } from '../src/cli/describe-error.js';
import type { RunCompleted, RunCancelled } from '../src/index.js';
import { initialState, reduce } from '../src/web/state.js';
import { cancelReasonWords, outcomeWords } from '../src/web/wording.js';

const usage = { inputTokens: 900, outputTokens: 200, totalTokens: 1_100, reported: true };
const budgetStop: RunCompleted = {
  type: 'run_completed',
  runId: 'r1',
  seq: 9,
  turn: 3,
  at: 0,
  stopReason: 'budget',
  output: 'partial answer',
  finishReason: 'tool_calls',
  undelivered: [],
  usage,
  cost: { amount: 0.0123456, complete: true },
  budget: { limit: 'maxTotalTokens', max: 1_000, used: 1_100 },
};

describe('the CLI summary line', () => {
  it('names the budget stop, the limit and the figures, and that what it did was saved', () => {
    expect(stopReason(budgetStop, { saved: true })).toBe(
      'budget (the run reached a limit of its budget: maxTotalTokens: 1100 of 1000 used; what it did was saved)',
    );
    const estimated = {
      ...budgetStop,
      budget: { limit: 'maxInputTokens', max: 500, used: 300, estimate: 250 },
    } as const;
    expect(stopReason(estimated)).toContain('maxInputTokens: 300 of 500 used (next request ~250)');
  });

  it('with a conversation kept in memory (--no-save) says what it did was kept in memory, not saved', () => {
    const line = stopReason(budgetStop, { saved: false });
    console.log(`--no-save budget stop: ${line}`);
    expect(line).toBe(
      'budget (the run reached a limit of its budget: maxTotalTokens: 1100 of 1000 used; ' +
        'what it did was kept in memory, not saved)',
    );
    expect(stopReason(budgetStop)).toMatch(/; what it did was kept\)$/); // where it went unknown: no claim of a save
  });

  it('shows the cost, marked a lower bound when incomplete', () => {
    expect(costText({ amount: 0.0123456, complete: true })).toBe('cost 0.01235');
    expect(costText({ amount: 2, complete: false })).toBe('cost at least 2');
    expect(budgetText({ limit: 'maxCost', max: 0.5, used: 0.5000001 })).toBe('maxCost: 0.5 of 0.5 used');
  });
});

describe('the AG-UI mapping', () => {
  it('RUN_FINISHED success with result.stopReason budget, its figures and the cost', () => {
    const mapper = new AgUiMapper('t');
    const out = mapper.map(budgetStop);
    const finished = out.find((e) => e.type === EventType.RUN_FINISHED) as AGUIEvent & { result: unknown };
    expect(finished).toMatchObject({ outcome: { type: 'success' } });
    expect(finished.result).toMatchObject({
      stopReason: 'budget',
      budget: budgetStop.budget,
      cost: budgetStop.cost,
      output: 'partial answer',
    });
  });
});

describe('the page', () => {
  it('a budget stop is an outcome of its own with the figures in words', () => {
    const mapper = new AgUiMapper('t');
    const finished = mapper.map(budgetStop).find((e) => e.type === EventType.RUN_FINISHED)!;
    let state = reduce(initialState('t'), { type: 'send', id: 'u1', text: 'go' });
    state = reduce(state, { type: 'frame', id: '1', event: finished });
    const entry = state.entries.at(-1)!;
    expect(entry).toMatchObject({ kind: 'outcome', outcome: 'budget', reason: '1,100 of 1,000 total tokens used' });
    expect(outcomeWords(entry as Parameters<typeof outcomeWords>[0])).toEqual({
      headline: 'Stopped: the run reached its budget of tokens or cost. What it did so far was kept.',
      detail: '1,100 of 1,000 total tokens used.',
    });
  });

  it('a budget cancel reason reads as words, never JSON', () => {
    const reason: RunCancelled['reason'] = { type: 'budget', limit: 'maxCost', max: 0.5, used: 0.25, estimate: 0.3 };
    expect(cancelReasonWords(JSON.stringify(reason))).toBe(
      'The run reached its budget (0.25 of 0.5 cost used; the next request needed about 0.3 more)',
    );
  });
});
