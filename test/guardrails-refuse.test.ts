import { from, lastValueFrom, toArray } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { LOOPCTL_EVENTS, toAgUi } from '../src/ag-ui/index.js';
import {
  ConfigurationError,
  DEFAULT_GUARDRAIL_REFUSAL,
  MemorySession,
  defineAgent,
  run,
  tool,
  type Item,
  type OutputGuardrail,
} from '../src/index.js';
import { collectEvents, scriptedModel, sequentialIds } from '../src/testing/index.js';
import { checkAgUiStream } from './support/ag-ui.js';

/**
 * An output guardrail with `onTrip: 'refuse'` (docs/guardrails.md, "Refusing instead of failing"): the run completes
 * with the refusal as its answer and commits its history with the refused answer replaced by the refusal Item; the
 * default (`'fail'`) commits nothing.
 */

const PRIOR: Item[] = [
  { type: 'user', id: 'p1', text: 'earlier' },
  { type: 'assistant', id: 'p2', text: 'earlier answer', toolCalls: [] },
];
const ANSWER = ['Hello there. ', 'The secret ', 'is XYZZY. ', 'Bye.'];
const noSecret = (g: Partial<OutputGuardrail>): OutputGuardrail => ({
  name: 'leak-check',
  check: (o) => ({ tripwire: o.text.includes('secret') }),
  ...g,
});

const runWith = async (guard: OutputGuardrail) => {
  const agent = defineAgent({
    name: 'a',
    instructions: '',
    model: scriptedModel([{ text: ANSWER }]),
    guardrails: { output: [guard] },
  });
  const session = new MemorySession(PRIOR);
  const events = await collectEvents(run(agent, 'tell me', { session, idGenerator: sequentialIds() }));
  return { events, session };
};

describe("output guardrail onTrip: 'refuse'", () => {
  for (const mode of ['after', 'hold'] as const) {
    it(`'${mode}': the session holds the input and the refusal Item, not the answer`, async () => {
      const refusal = 'I cannot share that.';
      const { events, session } = await runWith(noSecret({ mode, onTrip: 'refuse', refusal }));
      const end = events.at(-1)!;
      expect(end).toMatchObject({ type: 'run_completed', stopReason: 'completed', output: refusal });
      expect(end).toMatchObject({ finishReason: 'refusal' });
      const tripped = events.find((e) => e.type === 'guardrail_tripped');
      expect(tripped).toMatchObject({ name: 'leak-check', kind: 'output', action: 'refuse_answer' });
      expect(session.items.slice(0, 2)).toEqual(PRIOR);
      const added = session.items.slice(2);
      expect(added.map((i) => [i.type, i.type === 'user' || i.type === 'assistant' ? i.text : ''])).toEqual([
        ['user', 'tell me'],
        ['assistant', refusal],
      ]);
      expect(JSON.stringify(session.items)).not.toMatch(/secret|XYZZY|Hello there|Bye/);
    });
  }

  it("'hold': the subscriber's events never carry the refused text", async () => {
    const { events } = await runWith(noSecret({ mode: 'hold', onTrip: 'refuse' }));
    const text = events.map((e) => (e.type === 'text_delta' ? e.delta : '')).join('');
    expect(text).toBe('Hello there. ');
    expect(JSON.stringify(events)).not.toMatch(/secret|XYZZY|Bye/);
    expect(events.at(-1)).toMatchObject({ type: 'run_completed', output: DEFAULT_GUARDRAIL_REFUSAL });
  });

  it("'hold': the AG-UI stream finishes with the refusal as the result, no refused text in it", async () => {
    const { events } = await runWith(noSecret({ mode: 'hold', onTrip: 'refuse', refusal: 'Not that.' }));
    const agui = await lastValueFrom(from(events).pipe(toAgUi({ threadId: 't' }), toArray()));
    await checkAgUiStream(agui);
    expect(JSON.stringify(agui)).not.toMatch(/secret|XYZZY|Bye/);
    const tripped = agui.find((e) => e.type === 'CUSTOM' && e.name === LOOPCTL_EVENTS.guardrailTripped);
    expect(tripped).toMatchObject({ value: { name: 'leak-check', action: 'refuse_answer' } });
    expect(agui.at(-1)).toMatchObject({
      type: 'RUN_FINISHED',
      outcome: { type: 'success' },
      result: { output: 'Not that.', finishReason: 'refusal' },
    });
  });

  it("'parallel': the run's earlier turns are committed, the refused answer replaced", async () => {
    const look = tool({ name: 'look', description: 'looks', parameters: z.object({}), execute: () => 'seen' });
    const agent = defineAgent({
      name: 'a',
      instructions: '',
      model: scriptedModel([{ toolCalls: [{ name: 'look' }] }, { text: ANSWER }]),
      tools: [look],
      guardrails: { output: [noSecret({ mode: 'parallel', onTrip: 'refuse' })] },
    });
    const session = new MemorySession(PRIOR);
    const events = await collectEvents(run(agent, 'tell me', { session, idGenerator: sequentialIds() }));
    expect(events.at(-1)).toMatchObject({ type: 'run_completed', output: DEFAULT_GUARDRAIL_REFUSAL });
    expect(session.items.slice(2).map((i) => i.type)).toEqual(['user', 'assistant', 'tool_result', 'assistant']);
    expect(session.items.at(-1)).toMatchObject({ type: 'assistant', text: DEFAULT_GUARDRAIL_REFUSAL, toolCalls: [] });
    expect(JSON.stringify(session.items)).not.toMatch(/secret|XYZZY|Hello there|Bye/);
  });

  it("'after': the streamed answer is retracted and replaced", async () => {
    const { events } = await runWith(noSecret({ onTrip: 'refuse' }));
    const tripped = events.find((e) => e.type === 'guardrail_tripped');
    expect(tripped).toMatchObject({ action: 'refuse_answer', retracted: true });
    expect(events.some((e) => e.type === 'model_response_completed')).toBe(false);
  });

  it("default ('fail'): the run fails and the session is exactly as before", async () => {
    for (const guard of [noSecret({ mode: 'hold' }), noSecret({ onTrip: 'fail' })]) {
      const { events, session } = await runWith(guard);
      expect(events.at(-1)).toMatchObject({ type: 'run_failed', stopReason: 'guardrail' });
      expect(events.find((e) => e.type === 'guardrail_tripped')).toMatchObject({ action: 'end_run' });
      expect(session.items).toEqual(PRIOR);
    }
  });

  it('an answer the guardrail passes is committed as usual', async () => {
    const { events, session } = await runWith({
      ...noSecret({ onTrip: 'refuse' }),
      check: () => ({ tripwire: false }),
    });
    expect(events.at(-1)).toMatchObject({ type: 'run_completed', output: ANSWER.join(''), finishReason: 'stop' });
    expect(session.items.at(-1)).toMatchObject({ type: 'assistant', text: ANSWER.join('') });
  });
});

describe('refusal options', () => {
  const bad: [unknown, string][] = [
    [{ onTrip: 'warn' }, 'agent.guardrails.output[0].onTrip'],
    [{ onTrip: 'refuse', refusal: '' }, 'agent.guardrails.output[0].refusal'],
    [{ onTrip: 'refuse', refusal: 42 }, 'agent.guardrails.output[0].refusal'],
    [{ refusal: 'no' }, 'agent.guardrails.output[0].refusal'],
    [{ onTrip: 'refuse', refusl: 'no' }, 'agent.guardrails.output[0].refusl'],
  ];
  for (const [extra, field] of bad) {
    it(`refuses ${field} (${JSON.stringify(extra)})`, () => {
      const output = [{ name: 'g', check: () => ({ tripwire: false }), ...(extra as object) }];
      const make = () =>
        defineAgent({ name: 'a', instructions: '', model: scriptedModel([]), guardrails: { output } as never });
      expect(make).toThrow(ConfigurationError);
      expect(make).toThrow(new RegExp(`^${field.replace(/[[\].]/g, '\\$&')}:`));
    });
  }
});
