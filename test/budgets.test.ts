/**
 * Budgets (docs/long-runs.md, "Budgets"): per-run limits of input, output and total tokens and of cost, checked
 * before each model call (what was used plus the request's calibrated estimate) and after each response (what it
 * reported). At a limit the run ends `run_completed` with `stopReason: 'budget'` and the figures, committing like
 * a stopped run; with `onLimit: 'cancel'` it is cancelled at once with a `budget` reason and commits nothing.
 * `cost` is on every terminal event when the budget has prices.
 */
import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import {
  ConfigurationError,
  MemorySession,
  defineAgent,
  resume,
  run,
  start,
  tool,
  type Budget,
  type RunCancelled,
  type RunCompleted,
  type RunEvent,
} from '../src/index.js';
import { collectEvents, scriptedModel, type ScriptedStep } from '../src/testing/index.js';

let ran = 0;
const noop = tool({ name: 'noop', description: 'n', parameters: z.object({}), execute: () => `ran ${++ran}` });
const usage = (inputTokens: number, outputTokens: number) => ({
  inputTokens,
  outputTokens,
  totalTokens: inputTokens + outputTokens,
});
/** `n` turns that each call `noop` and report `input` / `output` tokens, then a final answer. */
const toolTurns = (n: number, input: number, output: number, id = 'scripted') =>
  scriptedModel(
    [
      ...Array.from({ length: n }, (_, i): ScriptedStep => ({
        toolCalls: [{ name: 'noop', callId: `c${i + 1}` }],
        usage: usage(input, output),
      })),
      { text: 'done', usage: usage(input, output) },
    ],
    { id },
  );
const terminal = (events: RunEvent[]) => events.at(-1)!;

describe('a budget stop ends run_completed with stopReason budget and the figures', () => {
  it('maxOutputTokens, reached by what the responses reported: the turn’s tools run, the next turn never starts', async () => {
    const model = toolTurns(5, 100, 10);
    const session = new MemorySession();
    const agent = defineAgent({ name: 'a', instructions: '', model, tools: [noop] });
    const events = await collectEvents(run(agent, 'go', { session, budget: { maxOutputTokens: 25 } }));
    expect(model.requests).toHaveLength(3); // 10 + 10 < 25, then 30
    expect(terminal(events)).toMatchObject({
      type: 'run_completed',
      stopReason: 'budget',
      budget: { limit: 'maxOutputTokens', max: 25, used: 30 },
      usage: { inputTokens: 300, outputTokens: 30, totalTokens: 330, reported: true },
    });
    expect((terminal(events) as RunCompleted).budget).not.toHaveProperty('estimate');
    expect(events.filter((e) => e.type === 'turn_started')).toHaveLength(3);
    // committed like a stopped run: the third turn's call and its result are stored
    const stored = await session.load();
    expect(stored.at(-1)).toMatchObject({ type: 'tool_result', callId: 'c3', isError: false });
  });

  it('maxInputTokens, passed by the estimate of the next request (calibrated on the last response): nothing sent', async () => {
    const model = toolTurns(5, 100, 10);
    const agent = defineAgent({ name: 'a', instructions: '', model, tools: [noop] });
    const events = await collectEvents(run(agent, 'go', { budget: { maxInputTokens: 150 } }));
    expect(model.requests).toHaveLength(1);
    const end = terminal(events) as RunCompleted;
    expect(end).toMatchObject({ stopReason: 'budget', budget: { limit: 'maxInputTokens', max: 150, used: 100 } });
    // the raw estimate of this tiny request is a few tokens; calibrated on the first response (100 reported for
    // the first, smaller request) it is over 100: 100 + it > 150
    expect(end.budget!.estimate).toBeGreaterThan(100);
    expect(end.output).toBe('');
  });

  it('a request whose estimate alone passes maxTotalTokens is never sent; the input is committed', async () => {
    const model = scriptedModel(['never']);
    const session = new MemorySession();
    const agent = defineAgent({ name: 'a', instructions: 'x'.repeat(4_000), model });
    const handle = start(agent, 'go', { session, budget: { maxTotalTokens: 500 } });
    const result = await handle.result;
    expect(model.requests).toHaveLength(0);
    expect(result.stopReason).toBe('budget');
    expect(result.budget).toMatchObject({ limit: 'maxTotalTokens', max: 500, used: 0 });
    expect(result.budget!.estimate).toBeGreaterThanOrEqual(1_000);
    expect((await session.load()).map((i) => i.type)).toEqual(['user']);
  });

  it('a final answer within the budget completes as usual', async () => {
    const model = toolTurns(1, 100, 10);
    const agent = defineAgent({ name: 'a', instructions: '', model, tools: [noop] });
    const events = await collectEvents(run(agent, 'go', { budget: { maxTotalTokens: 10_000 } }));
    expect(terminal(events)).toMatchObject({ type: 'run_completed', stopReason: 'completed', output: 'done' });
  });
});

describe("onLimit: 'cancel' hard-cancels at the limit", () => {
  it('run_cancelled with reason { type: budget, … } right after the response; its tools never run; nothing committed', async () => {
    const model = toolTurns(3, 100, 10);
    const session = new MemorySession();
    const agent = defineAgent({ name: 'a', instructions: '', model, tools: [noop] });
    const before = ran;
    const events = await collectEvents(
      run(agent, 'go', { session, budget: { maxTotalTokens: 100, onLimit: 'cancel' } }),
    );
    const end = terminal(events) as RunCancelled;
    expect(end).toMatchObject({
      type: 'run_cancelled',
      reason: { type: 'budget', limit: 'maxTotalTokens', max: 100, used: 110 },
      phase: 'dispatch',
      usage: { totalTokens: 110 },
    });
    expect(ran).toBe(before);
    expect(await session.load()).toEqual([]);
  });

  it('the check before a call cancels too', async () => {
    const model = scriptedModel(['never']);
    const agent = defineAgent({ name: 'a', instructions: 'x'.repeat(4_000), model });
    const events = await collectEvents(run(agent, 'go', { budget: { maxInputTokens: 100, onLimit: 'cancel' } }));
    expect(terminal(events)).toMatchObject({
      type: 'run_cancelled',
      reason: { type: 'budget', limit: 'maxInputTokens' },
    });
    expect(model.requests).toHaveLength(0);
  });
});

describe('cost from the price table', () => {
  const prices = { 'gpt-test': { input: 1, output: 2 } }; // per million tokens
  it('maxCost: each response priced by its model (looked up by the model’s name); the run stops before passing it', async () => {
    const model = toolTurns(5, 1_000, 500, 'openai:gpt-test'); // 0.002 a response
    const agent = defineAgent({ name: 'a', instructions: '', model, tools: [noop] });
    const events = await collectEvents(run(agent, 'go', { budget: { maxCost: 0.005, prices } }));
    const end = terminal(events) as RunCompleted;
    expect(model.requests).toHaveLength(2); // 0.004 used; the third request's input alone would pass 0.005
    expect(end.stopReason).toBe('budget');
    expect(end.budget!.limit).toBe('maxCost');
    expect(end.budget!.used).toBeCloseTo(0.004, 12);
    expect(end.cost!.amount).toBeCloseTo(0.004, 12);
    expect(end.cost!.complete).toBe(true);
  });

  it('cached input tokens at the cache prices', async () => {
    const cached = { ...usage(1_000, 0), cacheReadTokens: 800 };
    const model = scriptedModel([{ text: 'ok', usage: cached }], { id: 'openai:gpt-test' });
    const agent = defineAgent({ name: 'a', instructions: '', model });
    const budget: Budget = { prices: { 'gpt-test': { input: 10, output: 0, cacheRead: 1 } } };
    const events = await collectEvents(run(agent, 'go', { budget }));
    expect((terminal(events) as RunCompleted).cost!.amount).toBeCloseTo((200 * 10 + 800 * 1) / 1e6, 12);
  });

  it('cost rides on run_cancelled and run_failed too; a model without a price makes it incomplete', async () => {
    const model = scriptedModel([{ text: 'ok', usage: usage(1_000, 0) }, { text: 'second' }], { id: 'other' });
    const agent = defineAgent({ name: 'a', instructions: '', model });
    const failing = defineAgent({
      name: 'b',
      instructions: '',
      model: scriptedModel([], { id: 'openai:gpt-test' }),
    });
    const completed = terminal(await collectEvents(run(agent, 'go', { budget: { prices } })));
    expect(completed).toMatchObject({ type: 'run_completed', cost: { amount: 0, complete: false } });
    const failed = terminal(await collectEvents(run(failing, 'go', { budget: { prices } })));
    expect(failed).toMatchObject({ type: 'run_failed', cost: { amount: 0, complete: true } });
    const cancelled = terminal(
      await collectEvents(run(agent, 'go', { budget: { prices }, signal: AbortSignal.abort('x') })),
    );
    expect(cancelled).toMatchObject({ type: 'run_cancelled', cost: { amount: 0, complete: true } });
  });

  it('a sub-run’s responses are priced by its own model; its tokens count toward the parent’s limits', async () => {
    const childModel = scriptedModel([{ text: 'found', usage: usage(1_000, 0) }], { id: 'openai:gpt-child' });
    const child = defineAgent({ name: 'child', instructions: '', model: childModel });
    const parentModel = scriptedModel(
      [{ toolCalls: [{ name: 'research', callId: 'r1', arguments: { input: 'q' } }], usage: usage(1_000, 0) }, 'done'],
      { id: 'openai:gpt-test' },
    );
    const research = child.asTool({ name: 'research', description: 'researches' });
    const parent = defineAgent({ name: 'p', instructions: '', model: parentModel, tools: [research] });
    const budget: Budget = { prices: { ...prices, 'gpt-child': { input: 3, output: 0 } } };
    const end = terminal(await collectEvents(run(parent, 'go', { budget }))) as RunCompleted;
    // parent: 1000 in at 1 + the default 10 in / 5 out of its last answer; child: 1000 in at 3
    expect(end.cost!.amount).toBeCloseTo((1_000 * 1 + 10 * 1 + 5 * 2 + 1_000 * 3) / 1e6, 12);
    expect(end.usage.inputTokens).toBe(2_010);
  });

  it('a resumed run prices its own responses only: the usage its suspension carried makes the cost incomplete', async () => {
    const gated = tool({
      name: 'gated',
      description: 'g',
      parameters: z.object({}),
      needsApproval: true,
      execute: () => 'done',
    });
    const model = scriptedModel(
      [
        { toolCalls: [{ name: 'gated', callId: 'g1' }], usage: usage(1_000, 0) },
        { text: 'done', usage: usage(10, 5) },
      ],
      { id: 'openai:gpt-test' },
    );
    const agent = defineAgent({ name: 'a', instructions: '', model, tools: [gated] });
    const suspended = (await start(agent, 'go', { approvals: 'suspend' }).result).suspended!;
    expect(suspended.usage.totalTokens).toBe(1_000);
    const resumed = resume(agent, suspended, { g1: { approve: true } }, { budget: { prices } });
    const end = terminal(await collectEvents(resumed.events$)) as RunCompleted;
    expect(end.usage.totalTokens).toBe(1_015); // the chain's usage, the suspension's included
    // Only the resumed response is priced (10 in at 1, 5 out at 2): the suspension keeps no cost, so it is no total.
    expect(end.cost).toEqual({ amount: (10 * 1 + 5 * 2) / 1e6, complete: false });
  });

  it('without prices there is no cost field', async () => {
    const agent = defineAgent({ name: 'a', instructions: '', model: scriptedModel(['ok']) });
    const end = terminal(await collectEvents(run(agent, 'go', { budget: { maxTotalTokens: 1_000 } })));
    expect(end).not.toHaveProperty('cost');
  });
});

describe('budget options are validated before anything runs', () => {
  const agent = defineAgent({ name: 'a', instructions: '', model: scriptedModel(['ok']) });
  const fieldOf = (budget: unknown): string => {
    try {
      run(agent, 'go', { budget: budget as Budget });
    } catch (e) {
      expect(e).toBeInstanceOf(ConfigurationError);
      return (e as ConfigurationError).field;
    }
    throw new Error('did not throw');
  };
  const cases: [string, unknown, string][] = [
    ['not an object', 5, 'options.budget'],
    ['zero tokens', { maxTotalTokens: 0 }, 'options.budget.maxTotalTokens'],
    ['a fraction of a token', { maxInputTokens: 1.5 }, 'options.budget.maxInputTokens'],
    ['a negative output limit', { maxOutputTokens: -1 }, 'options.budget.maxOutputTokens'],
    ['maxCost without prices', { maxCost: 1 }, 'options.budget.prices'],
    ['a cost that is not a number', { maxCost: '1', prices: {} }, 'options.budget.maxCost'],
    ['a price without output', { prices: { m: { input: 1 } } }, 'options.budget.prices["m"].output'],
    [
      'an unknown price field',
      { prices: { m: { input: 1, output: 1, cached: 1 } } },
      'options.budget.prices["m"].cached',
    ],
    ['an unknown onLimit', { maxTotalTokens: 1, onLimit: 'fail' }, 'options.budget.onLimit'],
    ['an unknown field', { maxTokens: 1 }, 'options.budget.maxTokens'],
  ];
  for (const [what, budget, field] of cases) {
    it(`${what}: ConfigurationError naming ${field}`, () => expect(fieldOf(budget)).toBe(field));
  }

  it('agent.contextWindow must be a positive integer', () => {
    expect(() => defineAgent({ name: 'a', instructions: '', model: scriptedModel([]), contextWindow: 0 })).toThrow(
      'agent.contextWindow',
    );
  });
});
