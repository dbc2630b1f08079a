import { concatMap, timer, type Observable } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  CancelSignal,
  Mailbox,
  MemorySession,
  defineAgent,
  run,
  tool,
  type GuardrailVerdict,
  type InputGuardrail,
  type Item,
  type RunEvent,
  type Tool,
} from '../src/index.js';
import type { ModelEvent } from '../src/model/types.js';
import { scriptedModel, sequentialIds, type ScriptedStep } from '../src/testing/index.js';
import { observe } from './support/observe.js';

/**
 * Input guardrails (docs/guardrails.md) in virtual time. A guardrail's verdict is a cold marble (`--p` passes at
 * frame 2, `--t` trips at frame 2); the model answers at the frame its step says. The ties: a trip in the frame the
 * model finishes (both orders of scheduling: the trip wins, nothing runs), a trip and a user cancel in one frame
 * (the first decides), a trip while a tool wave runs (a later turn's steering), `mode: 'before'` (nothing sent),
 * and a trip while the history is compacted (the summary call torn down).
 */
let ts: TestScheduler;
beforeEach(() => {
  ts = new TestScheduler((actual, expected) => expect(actual).toEqual(expected));
});

const PASS: GuardrailVerdict = { tripwire: false };
const TRIP: GuardrailVerdict = { tripwire: true, output: { reason: 'off topic' } };

function guard(verdict$: () => Observable<GuardrailVerdict>, extra: Partial<InputGuardrail> = {}): InputGuardrail {
  return { name: 'topic', check: () => verdict$(), ...extra };
}

function setup(guards: InputGuardrail[], steps: (ScriptedStep | string)[], tools: Tool<any, any>[] = []) {
  const model = scriptedModel(steps);
  const agent = defineAgent({ name: 'g', instructions: '', model, tools, guardrails: { input: guards } });
  const session = new MemorySession();
  return { model, agent, session };
}

describe('marbles: an input guardrail beside the first model request', () => {
  it('trips while the model streams: the request is torn down in that frame, run_failed guardrail, nothing kept', () => {
    ts.run(({ cold, expectSubscriptions }) => {
      const verdict = cold('---t|', { t: TRIP });
      const hold = cold('-----x|');
      const { model, agent, session } = setup([guard(() => verdict)], [{ text: ['Hel', 'lo'], delayMs: 1, hold }]);
      const { log, events } = observe(ts, run(agent, 'hi', { session, idGenerator: sequentialIds() }));
      ts.flush();
      expect(log).toEqual([
        '0 run_started',
        '0 turn_started',
        '0 guardrail_started',
        '0 model_request_started',
        '1 text_delta',
        '1 text_delta',
        '3 guardrail_tripped',
        '3 run_failed:guardrail',
      ]);
      expectSubscriptions(hold.subscriptions).toBe('-^-!');
      expect(model.calls[0]).toMatchObject({ tornDown: true, finished: false });
      expect(events.at(-1)).toMatchObject({
        stopReason: 'guardrail',
        error: { name: 'GuardrailTrippedError', guardrail: 'topic', kind: 'input' },
      });
      expect(events.find((e) => e.type === 'guardrail_tripped')).toMatchObject({
        name: 'topic',
        kind: 'input',
        action: 'end_run',
        output: { reason: 'off topic' },
      });
      expect(session.items).toEqual([]); // nothing committed
    });
  });

  it('passes after the model finished: the answer is held until the verdict, then the run completes', () => {
    ts.run(({ cold }) => {
      const verdict = cold('----p|', { p: PASS });
      const { agent, session } = setup([guard(() => verdict)], [{ text: 'ok', delayMs: 2 }]);
      const { log } = observe(ts, run(agent, 'hi', { session, idGenerator: sequentialIds() }));
      ts.flush();
      expect(log).toEqual([
        '0 run_started',
        '0 turn_started',
        '0 guardrail_started',
        '0 model_request_started',
        '2 text_delta',
        '4 guardrail_passed',
        '4 model_response_completed',
        '4 turn_completed',
        '4 run_completed',
      ]);
      expect(session.items.map((i) => i.type)).toEqual(['user', 'assistant']);
    });
  });

  for (const order of ['model first', 'guardrail first'] as const) {
    it(`a trip in the frame the model finishes (${order}): the trip wins, no tool runs, nothing kept`, () => {
      ts.run(({ cold }) => {
        const executed: string[] = [];
        const t = tool({
          name: 'write',
          description: 'writes',
          parameters: z.object({}),
          execute: () => {
            executed.push('write');
            return 'ok';
          },
        });
        // The model's frame-2 action is scheduled at frame 0 (its delay); the verdict's either at frame 0 before it
        // (subscribed first) or at frame 1 (after it): the order of the two actions in frame 2.
        const verdict = (): Observable<GuardrailVerdict> =>
          order === 'guardrail first'
            ? cold('--t|', { t: TRIP })
            : timer(1).pipe(concatMap(() => cold('-t|', { t: TRIP })));
        const step: ScriptedStep = { toolCalls: [{ name: 'write', callId: 'c1' }], delayMs: 2 };
        const { model, agent, session } = setup([guard(verdict)], [step, 'done'], [t]);
        const { log } = observe(ts, run(agent, 'hi', { session, idGenerator: sequentialIds() }));
        ts.flush();
        expect(log.slice(-2)).toEqual(['2 guardrail_tripped', '2 run_failed:guardrail']);
        expect(log.some((l) => l.includes('tool_call_started'))).toBe(false);
        expect(log.some((l) => l.includes('model_response_completed'))).toBe(false);
        expect(executed).toEqual([]);
        expect(model.requests).toHaveLength(1);
        expect(session.items).toEqual([]);
      });
    });
  }

  for (const first of ['cancel', 'trip'] as const) {
    it(`a trip and a user cancel in one frame (${first} first): the first decides, exactly one terminal`, () => {
      ts.run(({ cold }) => {
        const cancel = new CancelSignal();
        const verdict = cold('--t|', { t: TRIP });
        const hold = cold('-----x|');
        const { agent, session } = setup([guard(() => verdict)], [{ text: 'x', delayMs: 1, hold }]);
        // Scheduled before the run starts, the cancel's frame-2 action runs before the verdict's; scheduled once the
        // request is out (after the check subscribed its verdict), after it.
        if (first === 'cancel') ts.schedule(() => cancel.cancel('user stop'), 2);
        const { events } = observe(ts, run(agent, 'hi', { session, cancel }), (e) => {
          if (first === 'trip' && e.type === 'model_request_started') ts.schedule(() => cancel.cancel('user stop'), 2);
        });
        ts.flush();
        const terminals = events.filter((e) => e.type.startsWith('run_') && e.type !== 'run_started');
        expect(terminals).toHaveLength(1);
        if (first === 'cancel') {
          expect(terminals[0]).toMatchObject({ type: 'run_cancelled', reason: 'user stop', phase: 'model_stream' });
          expect(events.some((e) => e.type === 'guardrail_tripped')).toBe(false);
          expect(cancel.isCancelled).toBe(false); // re-armed by the run that saw it
        } else {
          expect(terminals[0]).toMatchObject({ type: 'run_failed', stopReason: 'guardrail' });
          expect(cancel.isCancelled).toBe(true); // the run had ended: the cancel is left for the next run
        }
        expect(session.items).toEqual([]);
      });
    });
  }

  it("mode 'before': nothing is sent until it passes; a trip sends no request at all", () => {
    ts.run(({ cold }) => {
      const verdict = cold('--t|', { t: TRIP });
      const { model, agent, session } = setup([guard(() => verdict, { mode: 'before' })], ['never']);
      const { log } = observe(ts, run(agent, 'hi', { session }));
      ts.flush();
      expect(log).toEqual([
        '0 run_started',
        '0 turn_started',
        '0 guardrail_started',
        '2 guardrail_tripped',
        '2 run_failed:guardrail',
      ]);
      expect(model.requests).toEqual([]);
      expect(session.items).toEqual([]);
    });
  });

  it("mode 'before' passing: the request goes out in the frame of the verdict", () => {
    ts.run(({ cold }) => {
      const verdict = cold('--p|', { p: PASS });
      const { agent } = setup([guard(() => verdict, { mode: 'before' })], [{ text: 'ok', delayMs: 1 }]);
      const { log } = observe(ts, run(agent, 'hi'));
      ts.flush();
      expect(log.slice(0, 6)).toEqual([
        '0 run_started',
        '0 turn_started',
        '0 guardrail_started',
        '2 guardrail_passed',
        '2 model_request_started',
        '3 text_delta',
      ]);
      expect(log.at(-1)).toBe('3 run_completed');
    });
  });

  it('a user cancel while a before-guardrail checks ends the run at hook; the check is unsubscribed', () => {
    ts.run(({ cold, expectSubscriptions }) => {
      const verdict = cold('-----p|', { p: PASS });
      const cancel = new CancelSignal();
      const { model, agent } = setup([guard(() => verdict, { mode: 'before' })], ['never']);
      ts.schedule(() => cancel.cancel('stop'), 2);
      const { events } = observe(ts, run(agent, 'hi', { cancel }));
      ts.flush();
      expect(events.at(-1)).toMatchObject({ type: 'run_cancelled', phase: 'hook', reason: 'stop' });
      expectSubscriptions(verdict.subscriptions).toBe('^-!');
      expect(model.requests).toEqual([]);
    });
  });
});

describe('marbles: input guardrails on steering', () => {
  it('a steering message that trips, injected while a tool wave runs, ends the next turn; nothing kept', () => {
    ts.run(({ cold }) => {
      const mailbox = new Mailbox();
      const checked: string[] = [];
      const slow = cold('---x|', { x: 'done' });
      const t = tool({ name: 'slow', description: 'slow', parameters: z.object({}), execute: () => slow });
      const g: InputGuardrail = {
        name: 'words',
        check: (input) => {
          checked.push(`${input.steering ? 'steering' : 'input'}: ${input.text}`);
          return cold('-v|', { v: input.text.includes('forbidden') ? TRIP : PASS });
        },
      };
      const hold = cold('---x|');
      const steps: ScriptedStep[] = [
        { toolCalls: [{ name: 'slow', callId: 'c1' }], delayMs: 1 },
        { text: 'x', hold },
      ];
      const { model, agent, session } = setup([g], steps, [t]);
      ts.schedule(() => void mailbox.push('do the forbidden thing'), 3); // during the tool call
      const { log, events } = observe(ts, run(agent, 'hi', { session, mailbox }));
      ts.flush();
      expect(checked).toEqual(['input: hi', 'steering: do the forbidden thing']);
      expect(log.slice(-7)).toEqual([
        '5 turn_started',
        '5 user_message_injected',
        '5 guardrail_started',
        '5 model_request_started',
        '5 text_delta',
        '6 guardrail_tripped',
        '6 run_failed:guardrail',
      ]);
      expect(model.calls[1]).toMatchObject({ tornDown: true });
      expect(session.items).toEqual([]);
      // The steering goes back to the mailbox like any failed run's (guarantee 7).
      expect(events.at(-1)).toMatchObject({ undelivered: [{ content: 'do the forbidden thing' }] });
    });
  });

  it('a turn without steering runs no input guardrail', () => {
    ts.run(({ cold }) => {
      let calls = 0;
      const t = tool({ name: 'a', description: 'a', parameters: z.object({}), execute: () => 'A' });
      const g: InputGuardrail = { name: 'n', check: () => (calls++, cold('-p|', { p: PASS })) };
      const { agent } = setup([g], [{ toolCalls: [{ name: 'a', callId: 'c1' }] }, 'done'], [t]);
      const { events } = observe(ts, run(agent, 'hi'));
      ts.flush();
      expect(calls).toBe(1);
      expect(events.at(-1)).toMatchObject({ type: 'run_completed', output: 'done' });
    });
  });
});

export type { RunEvent };

describe('marbles: an input trip during compaction', () => {
  const history: Item[] = [1, 2, 3].flatMap((n): Item[] => [
    { type: 'user', id: `u${n}`, text: `question ${n} `.repeat(40) },
    { type: 'assistant', id: `a${n}`, text: `answer ${n} `.repeat(40), toolCalls: [] },
  ]);

  it('the summary call is torn down in the frame of the trip; no summary, the session byte-identical', () => {
    ts.run(({ cold, expectSubscriptions }) => {
      // The summary call answers at frame 4; the input guardrail trips at 2, while it is pending.
      const summary$ = cold<ModelEvent>('----(r|)', {
        r: { type: 'response', response: { text: 'summary', toolCalls: [], finishReason: 'stop' } },
      });
      const model = scriptedModel([{ events: () => summary$ }, 'never']);
      const guard: InputGuardrail = { name: 'topic', check: () => cold('--t|', { t: TRIP }) };
      const agent = defineAgent({
        name: 'compacting',
        instructions: '',
        model,
        contextWindow: 100,
        compaction: {},
        guardrails: { input: [guard] },
      });
      const session = new MemorySession(history);
      const { log, events } = observe(ts, run(agent, 'go', { session }));
      ts.flush();
      expect(log).toEqual([
        '0 run_started',
        '0 turn_started',
        '0 guardrail_started',
        '0 compaction_started',
        '0 model_request_started',
        '2 guardrail_tripped',
        '2 run_failed:guardrail',
      ]);
      expectSubscriptions(summary$.subscriptions).toBe('^-!');
      expect(events.some((e) => e.type === 'compaction_completed')).toBe(false);
      expect(model.requests).toHaveLength(1); // the summary request only
      expect(JSON.stringify(session.load())).toBe(JSON.stringify(history));
      expect(session.writes).toBe(0);
    });
  });
});
