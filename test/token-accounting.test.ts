/**
 * Token accounting before a request (docs/long-runs.md, "Token accounting"): the fallback estimate per provider
 * family (characters per token of each family's tokenizer, plus a few per message), calibrated per run by the
 * input tokens each response reports, and the context windows of the common models in one table, overridden per
 * agent. A `prepareRequest` hook sees the estimate and the window.
 */
import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import {
  CHARS_PER_TOKEN,
  CONTEXT_WINDOWS,
  InputCalibration,
  contextWindowOf,
  defineAgent,
  estimateInputTokens,
  familyOf,
  run,
  tool,
  type RequestEstimate,
} from '../src/index.js';
import { collectEvents, scriptedModel } from '../src/testing/index.js';

describe('provider families', () => {
  const cases: [string, string][] = [
    ['openai:gpt-4o-mini', 'openai'],
    ['openai-responses:gpt-4.1', 'openai'],
    ['anthropic:claude-sonnet-4-5', 'anthropic'],
    ['gemini:gemini-2.5-flash', 'gemini'],
    ['google:gemini-1.5-pro', 'gemini'],
    ['o3-mini', 'openai'],
    ['claude-3-5-haiku-latest', 'anthropic'],
    ['scripted', 'other'],
  ];
  for (const [id, family] of cases) it(`${id} is ${family}`, () => expect(familyOf(id)).toBe(family));
});

describe('context windows', () => {
  it('the longest prefix of the model’s name wins', () => {
    expect(contextWindowOf('openai:gpt-4o-mini-2024-07-18')).toBe(128_000);
    expect(contextWindowOf('openai:gpt-4')).toBe(8_192);
    expect(contextWindowOf('openai:gpt-4.1-nano')).toBe(1_047_576);
    expect(contextWindowOf('anthropic:claude-opus-4-1')).toBe(200_000);
    expect(contextWindowOf('gemini:gemini-1.5-pro-002')).toBe(2_097_152);
    expect(contextWindowOf('openai:o1-mini')).toBe(128_000);
  });

  it('an unknown model has no window; an override wins over the table', () => {
    expect(contextWindowOf('local:llama3')).toBeUndefined();
    expect(contextWindowOf('openai:gpt-4o', 8_000)).toBe(8_000);
    expect(Object.isFrozen(CONTEXT_WINDOWS)).toBe(true);
  });
});

describe('the fallback estimate', () => {
  const request = (text: string) => ({
    instructions: '',
    items: [{ type: 'user' as const, id: 'u', text }],
    tools: [],
  });

  it('is the characters over the family’s characters per token, plus a few tokens per message, rounded up', () => {
    const text = 'a'.repeat(400);
    expect(estimateInputTokens(request(text), 'openai')).toBe(400 / CHARS_PER_TOKEN.openai + 3);
    expect(estimateInputTokens(request(text), 'anthropic')).toBe(Math.ceil(400 / 3.5 + 3));
    expect(estimateInputTokens(request(text), 'gemini')).toBe(400 / 4 + 2);
  });

  it('counts instructions, tool calls, results and the tools’ schemas', () => {
    const bare = estimateInputTokens(request('hi'), 'openai');
    const tools = [{ name: 'read_file', description: 'Reads a file', parameters: { type: 'object' } }];
    expect(estimateInputTokens({ ...request('hi'), tools }, 'openai')).toBeGreaterThan(bare);
    expect(estimateInputTokens({ ...request('hi'), instructions: 'x'.repeat(100) }, 'openai')).toBe(bare + 25 + 3);
    const items = [
      { type: 'assistant' as const, id: 'a', text: '', toolCalls: [{ callId: 'c', name: 'f', arguments: '{"p":1}' }] },
      { type: 'tool_result' as const, callId: 'c', output: 'y'.repeat(40), isError: false },
    ];
    expect(estimateInputTokens({ instructions: '', items, tools: [] }, 'openai')).toBe(
      Math.ceil((1 + 7 + 1 + 41) / 4 + 6),
    );
  });

  it('the calibration keeps the last measured ratio of reported to estimated', () => {
    const c = new InputCalibration();
    expect(c.apply(100)).toBe(100);
    c.measure(100, 150);
    expect(c.apply(10)).toBe(15);
    c.measure(50, 25);
    expect(c.apply(10)).toBe(5);
    c.measure(50, 0); // a response that reported nothing measures nothing
    expect(c.ratio).toBe(0.5);
  });
});

describe('a prepareRequest hook sees the estimate and the window', () => {
  it('calibrated by the run’s last response, with the agent’s contextWindow', async () => {
    const usage = { inputTokens: 400, outputTokens: 1, totalTokens: 401 };
    const model = scriptedModel(
      [
        { toolCalls: [{ name: 'noop', callId: 'c1' }], usage },
        { text: 'done', usage },
      ],
      { id: 'openai:gpt-4o' },
    );
    const noop = tool({ name: 'noop', description: 'n', parameters: z.object({}), execute: () => 'ok' });
    const agent = defineAgent({ name: 'a', instructions: '', model, tools: [noop], contextWindow: 4_096 });
    const seen: RequestEstimate[] = [];
    await collectEvents(run(agent, 'go', { hooks: { prepareRequest: ({ estimate }) => void seen.push(estimate) } }));
    expect(seen).toHaveLength(2);
    expect(seen[0]).toMatchObject({ family: 'openai', contextWindow: 4_096 });
    expect(seen[0]!.inputTokens).toBe(seen[0]!.raw); // nothing measured yet
    // the first request was reported at 400 tokens: the second one is estimated at its raw size times that ratio
    expect(seen[1]!.inputTokens).toBe(Math.ceil(seen[1]!.raw * (400 / seen[0]!.raw)));
  });
});
