/**
 * Usage says whether it is complete: `reported` is false as soon as one model response summed into it
 * (a retry's, a rescue's, a sub-run's included) came without token counts, and the totals count only
 * the responses that did report. A run that made no model call has the neutral usage (0, reported).
 */
import { of } from 'rxjs';
import { describe, expect, it } from 'vitest';
import {
  CancelSignal,
  UsageSchema,
  ZERO_USAGE,
  addUsage,
  defineAgent,
  run,
  type ModelEvent,
  type ModelProvider,
} from '../src/index.js';
import { collectEvents, scriptedModel } from '../src/testing/index.js';

/** A provider whose responses come from `answers` in order; `usage: undefined` is a response without counts. */
function answering(
  answers: { text: string; usage?: { inputTokens: number; outputTokens: number; totalTokens: number } }[],
): ModelProvider {
  let n = 0;
  return {
    id: 'counted',
    call: () => {
      const a = answers[n++]!;
      const response = {
        text: a.text,
        toolCalls: [],
        finishReason: 'stop' as const,
        ...(a.usage ? { usage: a.usage } : {}),
      };
      return of<ModelEvent>({ type: 'response', response });
    },
  };
}

const counts = (i: number, o: number) => ({ inputTokens: i, outputTokens: o, totalTokens: i + o });

describe('Usage.reported', () => {
  it('ZERO_USAGE is the neutral element: zero counts, reported, frozen', () => {
    expect(ZERO_USAGE).toEqual({ inputTokens: 0, outputTokens: 0, totalTokens: 0, reported: true });
    expect(Object.isFrozen(ZERO_USAGE)).toBe(true);
    expect(UsageSchema.safeParse({ inputTokens: 0, outputTokens: 0, totalTokens: 0 }).success).toBe(false);
  });

  it('addUsage sums the counts and ANDs reported; a response with no usage adds (0, 0, 0, not reported)', () => {
    const a = { ...counts(3, 2), reported: true };
    expect(addUsage(a, counts(10, 5))).toEqual({ inputTokens: 13, outputTokens: 7, totalTokens: 20, reported: true });
    expect(addUsage(a, undefined)).toEqual({ inputTokens: 3, outputTokens: 2, totalTokens: 5, reported: false });
    expect(addUsage(a, { ...counts(1, 1), reported: false })).toEqual({
      inputTokens: 4,
      outputTokens: 3,
      totalTokens: 7,
      reported: false,
    });
    expect(addUsage({ ...a, reported: false }, counts(1, 1))).toEqual({
      inputTokens: 4,
      outputTokens: 3,
      totalTokens: 7,
      reported: false,
    });
    expect(addUsage(ZERO_USAGE, counts(1, 2))).toEqual({
      inputTokens: 1,
      outputTokens: 2,
      totalTokens: 3,
      reported: true,
    });
  });

  it('a response without counts: model_response_completed has (0, 0, 0, not reported); the run total is not reported', async () => {
    const agent = defineAgent({ name: 'a', instructions: '', model: answering([{ text: 'hi' }]) });
    const events = await collectEvents(run(agent, 'q'));
    expect(events.find((e) => e.type === 'model_response_completed')).toMatchObject({
      usage: { inputTokens: 0, outputTokens: 0, totalTokens: 0, reported: false },
    });
    expect(events.at(-1)).toMatchObject({
      type: 'run_completed',
      usage: { inputTokens: 0, outputTokens: 0, totalTokens: 0, reported: false },
    });
  });

  it('two turns, one response reported and one not: the total counts the reported one and is not reported', async () => {
    const model = answering([{ text: 'first', usage: counts(10, 5) }, { text: 'second' }]);
    const agent = defineAgent({ name: 'a', instructions: '', model });
    // A push during the first answer gets one more turn (the final-answer check).
    const hooks = {
      beforeModelCall: (ctx: { turn: number; mailbox: { push(t: string): unknown } }) =>
        void (ctx.turn === 1 && ctx.mailbox.push('more')),
    };
    const events = await collectEvents(run(agent, 'q', { hooks }));
    expect(
      events
        .filter((e) => e.type === 'model_response_completed')
        .map((e) => e.type === 'model_response_completed' && e.usage),
    ).toEqual([
      { inputTokens: 10, outputTokens: 5, totalTokens: 15, reported: true },
      { inputTokens: 0, outputTokens: 0, totalTokens: 0, reported: false },
    ]);
    expect(events.at(-1)).toMatchObject({
      type: 'run_completed',
      output: 'second',
      usage: { inputTokens: 10, outputTokens: 5, totalTokens: 15, reported: false },
    });
  });

  it('every response reported: the total is reported', async () => {
    const agent = defineAgent({
      name: 'a',
      instructions: '',
      model: scriptedModel([{ text: 'hi', usage: counts(7, 3) }]),
    });
    const events = await collectEvents(run(agent, 'q'));
    expect(events.at(-1)).toMatchObject({
      type: 'run_completed',
      usage: { inputTokens: 7, outputTokens: 3, totalTokens: 10, reported: true },
    });
  });

  it('a run that made no model call (cancelled at turn entry) has the neutral usage', async () => {
    const cancel = new CancelSignal();
    cancel.cancel();
    const agent = defineAgent({ name: 'a', instructions: '', model: scriptedModel(['never']) });
    const events = await collectEvents(run(agent, 'q', { cancel }));
    expect(events.at(-1)).toMatchObject({
      type: 'run_cancelled',
      usage: { inputTokens: 0, outputTokens: 0, totalTokens: 0, reported: true },
    });
  });

  it("a sub-run's unreported usage makes the parent's not reported", async () => {
    const child = defineAgent({ name: 'child', instructions: '', model: answering([{ text: 'child answer' }]) });
    const parent = defineAgent({
      name: 'parent',
      instructions: '',
      model: scriptedModel([
        { toolCalls: [{ name: 'ask', arguments: { input: 'x' } }], usage: counts(1, 1) },
        { text: 'done', usage: counts(2, 2) },
      ]),
      tools: [child.asTool({ name: 'ask', description: '' })],
    });
    const events = await collectEvents(run(parent, 'q'));
    expect(events.at(-1)).toMatchObject({
      type: 'run_completed',
      usage: { inputTokens: 3, outputTokens: 3, totalTokens: 6, reported: false },
    });
  });
});
