import { concatMap, timer, type Observable } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  MemorySession,
  defineAgent,
  run,
  tool,
  type GuardrailVerdict,
  type OutputGuardrail,
  type RunEvent,
  type Tool,
} from '../src/index.js';
import { eventLabel, scriptedModel, type ScriptedStep } from '../src/testing/index.js';

/**
 * Output guardrails (docs/guardrails.md) in virtual time, mode by mode. The answer streams as the scripted step
 * says (`deltaDelayMs` between its pieces); a verdict is a cold marble per check. Timeline entries are
 * `frame label`, with a text_delta's text after a colon, so the release order in 'hold' mode is read off the log.
 */
let ts: TestScheduler;
beforeEach(() => {
  ts = new TestScheduler((actual, expected) => expect(actual).toEqual(expected));
});

const PASS: GuardrailVerdict = { tripwire: false };
const TRIP: GuardrailVerdict = { tripwire: true, output: 'leak' };

function setup(guards: OutputGuardrail[], steps: (ScriptedStep | string)[], tools: Tool<any, any>[] = []) {
  const model = scriptedModel(steps);
  const agent = defineAgent({ name: 'o', instructions: '', model, tools, guardrails: { output: guards } });
  return { model, agent, session: new MemorySession() };
}

const label = (e: RunEvent): string => (e.type === 'text_delta' ? `text_delta:${e.delta}` : eventLabel(e));

function watch(events$: Observable<RunEvent>) {
  const log: string[] = [];
  const events: RunEvent[] = [];
  events$.subscribe((e) => {
    log.push(`${ts.now()} ${label(e)}`);
    events.push(e);
  });
  return { log, events };
}

/** The text the subscriber got. */
const delivered = (events: RunEvent[]) => events.map((e) => (e.type === 'text_delta' ? e.delta : '')).join('');

describe("marbles: mode 'after'", () => {
  it('the answer streams as usual; a trip at the end retracts it and ends the run; nothing kept', () => {
    ts.run(({ cold }) => {
      const checked: unknown[] = [];
      const guard: OutputGuardrail = {
        name: 'leaks',
        check: (output) => (checked.push(output), cold('--t|', { t: TRIP })),
      };
      const { agent, session } = setup([guard], [{ text: ['The key ', 'is 42.'], deltaDelayMs: 1 }]);
      const { log, events } = watch(run(agent, 'hi', { session }));
      ts.flush();
      expect(log).toEqual([
        '0 run_started',
        '0 turn_started',
        '0 model_request_started',
        '0 text_delta:The key ',
        '1 text_delta:is 42.',
        '1 guardrail_started',
        '3 guardrail_tripped',
        '3 run_failed:guardrail',
      ]);
      expect(checked).toEqual([{ text: 'The key is 42.', final: true }]);
      expect(events.find((e) => e.type === 'guardrail_tripped')).toMatchObject({
        kind: 'output',
        retracted: true,
        output: 'leak',
      });
      expect(session.items).toEqual([]);
    });
  });

  it('a pass lets the run complete and commit; a response with tool calls is not checked', () => {
    ts.run(({ cold }) => {
      let checks = 0;
      const guard: OutputGuardrail = { name: 'g', check: () => (checks++, cold('-p|', { p: PASS })) };
      const t = tool({ name: 'a', description: 'a', parameters: z.object({}), execute: () => 'A' });
      const { agent, session } = setup([guard], [{ text: 'looking', toolCalls: [{ name: 'a' }] }, 'done'], [t]);
      const { events } = watch(run(agent, 'hi', { session }));
      ts.flush();
      expect(checks).toBe(1);
      expect(events.at(-1)).toMatchObject({ type: 'run_completed', output: 'done' });
      expect(session.items.map((i) => i.type)).toEqual(['user', 'assistant', 'tool_result', 'assistant']);
    });
  });
});

describe("marbles: mode 'hold'", () => {
  it('releases sentence by sentence, each after its check passed, in order; the last after the final check', () => {
    ts.run(({ cold }) => {
      const checked: unknown[] = [];
      // The first chunk's check takes 3 frames, later ones 1: release order follows the text, not the verdicts.
      const guard: OutputGuardrail = {
        name: 'h',
        mode: 'hold',
        check: (output) => (checked.push(output), cold(checked.length === 1 ? '---p|' : '-p|', { p: PASS })),
      };
      const { agent, session } = setup([guard], [{ text: ['One. ', 'Two. ', 'Three'], deltaDelayMs: 1 }]);
      const { log } = watch(run(agent, 'hi', { session }));
      ts.flush();
      expect(log).toEqual([
        '0 run_started',
        '0 turn_started',
        '0 model_request_started',
        '0 guardrail_started',
        '2 guardrail_started', // the response is in: the chunk check in flight is abandoned, the whole answer checked
        '3 guardrail_passed',
        '3 text_delta:One. Two. Three',
        '3 model_response_completed',
        '3 turn_completed',
        '3 run_completed',
      ]);
      expect(checked).toEqual([
        { text: 'One. ', final: false },
        { text: 'One. Two. Three', final: true },
      ]);
      expect(session.items.at(-1)).toMatchObject({ type: 'assistant', text: 'One. Two. Three' });
    });
  });

  it('a slow stream: each chunk is released as soon as its check passes, in the order of the text', () => {
    ts.run(({ cold }) => {
      const checked: string[] = [];
      const guard: OutputGuardrail = {
        name: 'h',
        mode: 'hold',
        check: (output) => (checked.push(output.text), cold('-p|', { p: PASS })),
      };
      const { agent } = setup([guard], [{ text: ['One. ', 'Two. ', 'Three'], deltaDelayMs: 4 }]);
      const { log } = watch(run(agent, 'hi'));
      ts.flush();
      expect(log.filter((l) => l.includes('text_delta') || l.includes('guardrail_passed'))).toEqual([
        '1 guardrail_passed',
        '1 text_delta:One. ',
        '5 guardrail_passed',
        '5 text_delta:Two. ',
        '9 guardrail_passed',
        '9 text_delta:Three',
      ]);
      expect(checked).toEqual(['One. ', 'One. Two. ', 'One. Two. Three']);
    });
  });

  it('a trip on the second sentence: only the first reaches the subscriber; the model is torn down', () => {
    ts.run(({ cold, expectSubscriptions }) => {
      const guard: OutputGuardrail = {
        name: 'h',
        mode: 'hold',
        check: (output) => cold('-v|', { v: output.text.includes('secret') ? TRIP : PASS }),
      };
      const hold = cold('----------x|');
      const step: ScriptedStep = { text: ['Hello. ', 'The secret is 42. ', 'Bye.'], deltaDelayMs: 3, hold };
      const { agent, session, model } = setup([guard], [step]);
      const { log, events } = watch(run(agent, 'hi', { session }));
      ts.flush();
      expect(delivered(events)).toBe('Hello. ');
      // 'Hello. ' at 0 (passed at 1, released), 'The secret is 42. ' at 3: its check trips at 4.
      expect(log.slice(-5)).toEqual([
        '1 guardrail_passed',
        '1 text_delta:Hello. ',
        '3 guardrail_started',
        '4 guardrail_tripped',
        '4 run_failed:guardrail',
      ]);
      const tripped = events.find((e) => e.type === 'guardrail_tripped');
      expect(tripped).toMatchObject({ kind: 'output', action: 'end_run' });
      expect(tripped).not.toHaveProperty('retracted'); // what was shown had passed: nothing is taken back
      expect(model.calls[0]).toMatchObject({ tornDown: true, finished: false });
      expectSubscriptions(hold.subscriptions).toBe([]);
      expect(session.items).toEqual([]);
    });
  });
});

describe("marbles: mode 'parallel'", () => {
  it('streams as usual; a trip on a chunk cancels the model mid-stream and retracts what was shown', () => {
    ts.run(({ cold, expectSubscriptions }) => {
      const guard: OutputGuardrail = {
        name: 'p',
        mode: 'parallel',
        check: (output) => cold('--v|', { v: output.text.includes('secret') ? TRIP : PASS }),
      };
      const hold = cold('---------x|');
      const step: ScriptedStep = { text: ['Hello. ', 'The secret. ', 'More'], deltaDelayMs: 1, hold };
      const { agent, session, model } = setup([guard], [step]);
      const { log, events } = watch(run(agent, 'hi', { session }));
      ts.flush();
      const started = events.filter((e) => e.type === 'guardrail_started');
      expect(started.map((e) => e.type === 'guardrail_started' && e.mode)).toEqual(['parallel', 'parallel']);
      expect(log).toEqual([
        '0 run_started',
        '0 turn_started',
        '0 model_request_started',
        '0 text_delta:Hello. ',
        '0 guardrail_started',
        '1 text_delta:The secret. ',
        '2 guardrail_passed', // 'Hello. ' (its verdict was scheduled before the model's next piece)
        '2 guardrail_started', // 'Hello. The secret. '
        '2 text_delta:More',
        '4 guardrail_tripped',
        '4 run_failed:guardrail',
      ]);
      expect(events.find((e) => e.type === 'guardrail_tripped')).toMatchObject({ kind: 'output', retracted: true });
      expectSubscriptions(hold.subscriptions).toBe('--^-!');
      expect(model.calls[0]).toMatchObject({ tornDown: true });
      expect(session.items).toEqual([]);
    });
  });

  for (const order of ['guardrail first', 'model first'] as const) {
    it(`a chunk's trip in the frame the model finishes (${order}): the run ends guardrail, nothing recorded`, () => {
      ts.run(({ cold }) => {
        // The model's last piece (and its response) is scheduled at frame 0 for frame 2; the chunk's verdict either at
        // frame 0 before it (subscribed while the first piece was emitted) or at frame 1 (after it).
        const verdict = (): Observable<GuardrailVerdict> =>
          order === 'guardrail first'
            ? cold('--t|', { t: TRIP })
            : timer(1).pipe(concatMap(() => cold('-t|', { t: TRIP })));
        const guard: OutputGuardrail = { name: 'p', mode: 'parallel', check: verdict };
        const { agent, session } = setup([guard], [{ text: ['Hi. ', 'there'], deltaDelayMs: 2 }]);
        const { log } = watch(run(agent, 'hi', { session }));
        ts.flush();
        if (order === 'guardrail first') {
          // The stream is cut before its last piece.
          expect(log.slice(-4)).toEqual([
            '0 text_delta:Hi. ',
            '0 guardrail_started',
            '2 guardrail_tripped',
            '2 run_failed:guardrail',
          ]);
        } else {
          // The response is in first: the chunk's check is abandoned, the whole answer checked, and it trips.
          expect(log.slice(-4)).toEqual([
            '2 text_delta:there',
            '2 guardrail_started',
            '4 guardrail_tripped',
            '4 run_failed:guardrail',
          ]);
        }
        expect(log.some((l) => l.includes('model_response_completed'))).toBe(false);
        expect(session.items).toEqual([]);
      });
    });
  }
});
