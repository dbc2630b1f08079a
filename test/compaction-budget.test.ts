/**
 * A compaction's summary call and the run's budget (docs/long-runs.md, "Compaction" and "Budgets"): the summary
 * call passes the same check before a model call as the agent's requests (what the run used plus the summary
 * request's estimate), so at a limit nothing is sent and the run stops (or, with `onLimit: 'cancel'`, is
 * cancelled) as for any call; and a summary call that fails after a response was billed (an empty summary, or a
 * response followed by an error) has that usage counted in the run's usage, whether the run fails or truncates.
 */
import { concat, of, throwError, type Observable } from 'rxjs';
import { describe, expect, it } from 'vitest';
import {
  MemorySession,
  ModelCallError,
  defineAgent,
  estimateInputTokens,
  run,
  type AgentDefinition,
  type Item,
  type ModelRequest,
  type RunEvent,
} from '../src/index.js';
import type { ModelEvent, ModelProvider } from '../src/model/types.js';
import { collectEvents } from '../src/testing/index.js';

/** Two long Items, so a request with them passes 0.8 of a 1 000-token window; `keepRecentTurns: 1` covers both. */
const history: readonly Item[] = [
  { type: 'user', id: 'u1', text: 'x'.repeat(4000) },
  { type: 'assistant', id: 'a1', text: 'y'.repeat(4000), toolCalls: [] },
];
const billed = { inputTokens: 100, outputTokens: 7, totalTokens: 107 };

/** A non-streaming provider that records its requests and answers each with `answer(request)`. */
function provider(id: string, answer: (request: ModelRequest) => Observable<ModelEvent>) {
  const requests: ModelRequest[] = [];
  const model: ModelProvider & { requests: ModelRequest[] } = {
    id,
    stream: false,
    requests,
    call: (request) => {
      requests.push(request);
      return answer(request);
    },
  };
  return model;
}
const reply = (text: string, usage = billed): Observable<ModelEvent> =>
  of({ type: 'response', response: { text, toolCalls: [], finishReason: 'stop', usage } });
const agentModel = () =>
  provider('openai:agent', () => reply('answered', { ...billed, inputTokens: 50, totalTokens: 57 }));

function definition(summarizer: ModelProvider, agentProvider: ModelProvider, onFailure?: 'truncate'): AgentDefinition {
  return {
    name: 'c',
    instructions: '',
    model: agentProvider,
    contextWindow: 1_000,
    compaction: { model: summarizer, keepRecentTurns: 1, ...(onFailure ? { onFailure } : {}) },
  };
}
const ofType = <T extends RunEvent['type']>(events: RunEvent[], type: T) =>
  events.filter((e): e is Extract<RunEvent, { type: T }> => e.type === type);

/** The estimate of the summary request a run without a budget sends (the same history, the same input). */
async function summaryEstimate(): Promise<number> {
  const summarizer = provider('openai:summariser', () => reply('the summary'));
  await collectEvents(
    run(defineAgent(definition(summarizer, agentModel())), 'next', { session: new MemorySession(history) }),
  );
  expect(summarizer.requests).toHaveLength(1);
  return estimateInputTokens(summarizer.requests[0]!, 'openai');
}

describe('the summary call passes the budget’s check before a model call', () => {
  it("onLimit 'stop': past a limit nothing is sent, no compaction starts, the run stops with the summary's figures", async () => {
    const estimate = await summaryEstimate();
    const summarizer = provider('openai:summariser', () => reply('the summary'));
    const model = agentModel();
    const session = new MemorySession(history);
    const budget = { maxInputTokens: estimate - 1 };
    const events = await collectEvents(run(defineAgent(definition(summarizer, model)), 'next', { session, budget }));
    expect(events.at(-1)).toMatchObject({
      type: 'run_completed',
      stopReason: 'budget',
      budget: { limit: 'maxInputTokens', max: estimate - 1, used: 0, estimate },
      usage: { totalTokens: 0 },
    });
    expect(summarizer.requests).toEqual([]);
    expect(model.requests).toEqual([]);
    expect(ofType(events, 'compaction_started')).toEqual([]);
    // Committed like a stopped run: the history and the run's input, no summary.
    const stored = await session.load();
    expect(stored.slice(0, 2)).toEqual(history);
    expect(stored.filter((i) => i.type === 'summary')).toEqual([]);
    console.log(`summary estimate ${estimate} over maxInputTokens ${estimate - 1}: stopped, 0 requests sent`);
  });

  it('under the limit the summary is sent; its reported usage counts in the next check', async () => {
    const estimate = await summaryEstimate();
    const reported = { inputTokens: estimate, outputTokens: 7, totalTokens: estimate + 7 };
    const summarizer = provider('openai:summariser', () => reply('the summary', reported));
    const model = agentModel();
    const budget = { maxInputTokens: estimate + 10 };
    const events = await collectEvents(
      run(defineAgent(definition(summarizer, model)), 'next', { session: new MemorySession(history), budget }),
    );
    expect(summarizer.requests).toHaveLength(1);
    expect(ofType(events, 'compaction_completed')).toMatchObject([{ strategy: 'summary', usage: reported }]);
    // The agent's request (the summary and the input: more than 10 tokens) would pass the limit: not sent.
    expect(events.at(-1)).toMatchObject({
      type: 'run_completed',
      stopReason: 'budget',
      budget: { limit: 'maxInputTokens', max: estimate + 10, used: estimate },
      usage: reported,
    });
    expect(model.requests).toEqual([]);
  });

  it("onLimit 'cancel': run_cancelled with the budget reason, nothing sent, the session unchanged", async () => {
    const estimate = await summaryEstimate();
    const summarizer = provider('openai:summariser', () => reply('the summary'));
    const model = agentModel();
    const session = new MemorySession(history);
    const budget = { maxInputTokens: estimate - 1, onLimit: 'cancel' as const };
    const events = await collectEvents(run(defineAgent(definition(summarizer, model)), 'next', { session, budget }));
    expect(events.at(-1)).toMatchObject({
      type: 'run_cancelled',
      reason: { type: 'budget', limit: 'maxInputTokens', max: estimate - 1, used: 0, estimate },
    });
    expect(summarizer.requests).toEqual([]);
    expect(model.requests).toEqual([]);
    expect(ofType(events, 'compaction_started')).toEqual([]);
    expect(await session.load()).toEqual(history);
  });
});

describe('a failed summary call’s billed usage is counted in the run’s usage', () => {
  const failures: [string, () => Observable<ModelEvent>][] = [
    ['an empty summary', () => reply('  ')],
    [
      'a response followed by an error',
      () =>
        concat(
          reply('cut'),
          throwError(() => new ModelCallError('bad request', { status: 400 })),
        ),
    ],
  ];
  for (const [what, answer] of failures) {
    it(`${what}: the failed run's usage has it`, async () => {
      const summarizer = provider('openai:summariser', answer);
      const model = agentModel();
      const session = new MemorySession(history);
      const events = await collectEvents(run(defineAgent(definition(summarizer, model)), 'next', { session }));
      expect(events.at(-1)).toMatchObject({
        type: 'run_failed',
        error: { name: 'CompactionError', model: 'openai:summariser' },
        usage: billed,
      });
      expect(model.requests).toEqual([]);
      expect(await session.load()).toEqual(history);
    });

    it(`${what}: with onFailure 'truncate' the truncation carries it and the run's usage adds the agent's`, async () => {
      const summarizer = provider('openai:summariser', answer);
      const model = agentModel();
      const events = await collectEvents(
        run(defineAgent(definition(summarizer, model, 'truncate')), 'next', { session: new MemorySession(history) }),
      );
      expect(ofType(events, 'compaction_completed')).toMatchObject([
        { strategy: 'truncate', usage: billed, error: { name: 'CompactionError' } },
      ]);
      expect(events.at(-1)).toMatchObject({
        type: 'run_completed',
        output: 'answered',
        usage: { inputTokens: 150, outputTokens: 14, totalTokens: 164 },
      });
    });
  }
});
