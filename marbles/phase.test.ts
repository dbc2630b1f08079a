/**
 * The phase by structure (src/engine/waits.ts): a wait is entered when its Observable is
 * subscribed and left when it is finalized, and `run_cancelled.phase` is the innermost live wait
 * (docs/cancellation.md, "Notes on phases"). First the operator on its own, then the real engine:
 * a cancel in every one of the twelve waits reports that wait.
 */
import { Observable } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { CancelSignal } from '../src/cancel/cancel-signal.js';
import { Waits, waitingAt } from '../src/engine/waits.js';
import {
  MemorySession,
  ModelCallError,
  defineAgent,
  run,
  tool,
  type AgentDefinition,
  type CancelPhase,
  type Item,
  type RunEvent,
  type RunOptions,
} from '../src/index.js';
import type { ModelEvent } from '../src/model/types.js';
import { eventLabel, scriptedModel, type ScriptedStep } from '../src/testing/index.js';

let ts: TestScheduler;
beforeEach(() => {
  ts = new TestScheduler((actual, expected) => expect(actual).toEqual(expected));
});

describe('waitingAt: a wait lives from subscribe to finalize', () => {
  it('entered on subscribe, left on completion, error and unsubscribe', () => {
    ts.run(({ cold, expectSubscriptions, flush }) => {
      const waits = new Waits();
      const completes = cold('--a|');
      const errors = cold('----#');
      const endless = cold('-');
      completes.pipe(waitingAt(waits, 'tool_call')).subscribe();
      ts.schedule(() => errors.pipe(waitingAt(waits, 'hook')).subscribe({ error: () => {} }), 1);
      ts.schedule(() => {
        const sub = endless.pipe(waitingAt(waits, 'backoff')).subscribe();
        ts.schedule(() => sub.unsubscribe(), 5);
      }, 2);
      const seen: string[] = [];
      for (let frame = 0; frame <= 8; frame++) ts.schedule(() => seen.push(`${frame}:${waits.innermost}`), frame);
      flush();
      expect(seen).toEqual([
        '0:tool_call',
        '1:tool_call',
        '2:tool_call', // the deepest while it lives (it completes at 3)
        '3:hook',
        '4:hook',
        '5:hook', // then the hook (entered at 1) until its error, after the probe at 5
        '6:backoff',
        '7:backoff', // then the backoff, unsubscribed after the probe at 7
        '8:turn_entry', // nothing live: the next thing the run does is a turn's entry
      ]);
      expectSubscriptions(completes.subscriptions).toBe('^--!');
      expectSubscriptions(endless.subscriptions).toBe('--^----!');
    });
  });

  it('the innermost: the deepest live wait; of equally deep ones, the latest entered', () => {
    const waits = new Waits();
    const request = waits.enter('model_request');
    const gate = waits.enter('stream_gate');
    expect(waits.innermost).toBe('stream_gate'); // as deep as the request, entered later
    const probe = waits.enter('model_request');
    gate.unsubscribe();
    expect(waits.innermost).toBe('model_request');
    const boundary = waits.enter('wave_boundary');
    const tool = waits.enter('tool_call');
    const hook = waits.enter('hook');
    expect(waits.innermost).toBe('tool_call'); // a call that executes outranks a hook of its batch
    tool.unsubscribe();
    expect(waits.innermost).toBe('hook');
    hook.unsubscribe();
    expect(waits.innermost).toBe('wave_boundary');
    for (const wait of [boundary, probe, request]) wait.unsubscribe();
    request.unsubscribe(); // leaving twice is harmless
    expect(waits.innermost).toBe('turn_entry');
  });

  it('the wait is entered before the source is subscribed: a cancel raised while subscribing sees it', () => {
    const waits = new Waits();
    const seen: CancelPhase[] = [];
    // A tool that cancels its own run synchronously does so from inside this subscribe.
    const source = new Observable<never>(() => void seen.push(waits.innermost));
    const sub = source.pipe(waitingAt(waits, 'tool_call')).subscribe();
    seen.push(waits.innermost);
    sub.unsubscribe();
    seen.push(waits.innermost);
    expect(seen).toEqual(['tool_call', 'tool_call', 'turn_entry']);
  });
});

/** What a run looks like around one wait: its agent, options, and when (or in which handler) the cancel comes. */
interface Scenario {
  readonly agent: Partial<AgentDefinition> & { steps?: (ScriptedStep | string)[] };
  readonly options?: RunOptions;
  /** The frame of the cancel, or the event whose handler raises it (`later`: in an action it schedules). */
  readonly cancel: number | { readonly on: RunEvent['type']; readonly later?: true };
  /** A first run opens the model's breaker (the stream gate). */
  readonly openBreaker?: true;
}

type Cold = TestScheduler['createColdObservable'];
const delta = (text: string): ModelEvent => ({ type: 'text_delta', delta: text });
const answer = (text: string): ModelEvent => ({
  type: 'response',
  response: { text, toolCalls: [], finishReason: 'stop' },
});
const toolOf = (name: string, marble: () => Observable<string>) =>
  tool({ name, description: name, parameters: z.object({}), execute: () => marble() });
const twoCalls = { toolCalls: [{ name: 'a' }, { name: 'b' }], delayMs: 1 };
/** A stored history far over a 100-token window: the run compacts it before its first request. */
const longHistory = (): Item[] =>
  [1, 2, 3].flatMap((n): Item[] => [
    { type: 'user', id: `u${n}`, text: `question ${n} `.repeat(40) },
    { type: 'assistant', id: `a${n}`, text: `answer ${n} `.repeat(40), toolCalls: [] },
  ]);
const compacting = { contextWindow: 100, compaction: {} };

/** One run around each wait; the cancel lands while the run waits there. */
const scenarios: Record<CancelPhase, (cold: Cold) => Scenario> = {
  // after run_started, before the first turn's hop
  turn_entry: () => ({ agent: { steps: ['never'] }, cancel: { on: 'run_started', later: true } }),
  session_load: (cold) => {
    const session = Object.assign(new MemorySession(), { load: () => cold('-----(h|)', { h: [] }) });
    return { agent: { steps: ['never'] }, options: { session }, cancel: 3 };
  },
  model_request: () => ({ agent: { steps: [{ text: 'late', delayMs: 10 }] }, cancel: 3 }),
  model_stream: (cold) => {
    const stream = () => cold<ModelEvent>('-a-------(r|)', { a: delta('a'), r: answer('a') });
    return { agent: { steps: [{ events: stream }] }, cancel: 3 };
  },
  stream_gate: () => {
    const breaker = { failureThreshold: 1, cooldownMs: 100 };
    return { agent: { steps: [{ error: overloaded }, 'never'], breaker }, cancel: 50, openBreaker: true };
  },
  rescue: (cold) => {
    const broken = () => cold<ModelEvent>('-a-#', { a: delta('a') }, overloaded);
    const rescue = () => cold<ModelEvent>('-----(r|)', { r: answer('rescued') });
    return { agent: { steps: [{ events: broken }, { events: rescue }] }, cancel: 5 };
  },
  backoff: () => {
    const options = { retry: { initialDelayMs: 1000 }, random: () => 0.5 };
    return { agent: { steps: [{ error: overloaded, delayMs: 1 }, 'never'] }, options, cancel: 100 };
  },
  dispatch: () => ({ agent: { steps: [twoCalls] }, cancel: { on: 'model_response_completed' } }),
  between_tools: () => ({ agent: { steps: [twoCalls] }, cancel: { on: 'tool_call_completed' } }),
  wave_boundary: () => {
    const agent = { steps: [twoCalls], parallelToolCalls: { maxConcurrency: 1 } };
    return { agent, cancel: { on: 'tool_call_completed' } };
  },
  tool_call: () => ({ agent: { steps: [{ toolCalls: [{ name: 'slow' }], delayMs: 1 }] }, cancel: 4 }),
  hook: (cold) => {
    const hooks = { turnStarted: () => cold('-----h|', { h: undefined }) };
    return { agent: { steps: ['never'], hooks }, cancel: 3 };
  },
  approval: () => ({ agent: { steps: [{ toolCalls: [{ name: 'gated' }], delayMs: 1 }] }, cancel: 4 }),
  // the summary call of a compaction (its own model request inside it)
  compaction: () => ({
    agent: { steps: [{ text: 'the summary', delayMs: 10 }], ...compacting },
    options: { session: new MemorySession(longHistory()) },
    cancel: 3,
  }),
};

describe('a cancel in every wait reports that wait (the real engine)', () => {
  for (const [phase, make] of Object.entries(scenarios) as [CancelPhase, (cold: Cold) => Scenario][]) {
    it(phase, () => {
      ts.run(({ cold, flush }) => {
        const s = make(cold.bind(ts) as Cold);
        const model = scriptedModel(s.agent.steps ?? []);
        const tools = [
          toolOf('a', () => cold('-x|', { x: 'A' })),
          toolOf('b', () => cold('-x|', { x: 'B' })),
          toolOf('slow', () => cold('-----x|', { x: 'S' })),
          tool({
            name: 'gated',
            description: 'gated',
            parameters: z.object({}),
            needsApproval: true,
            execute: () => 'G',
          }),
        ];
        const { steps: _steps, ...definition } = s.agent;
        const agent = defineAgent({ name: 'p', instructions: '', model, tools, ...definition });
        if (s.openBreaker) run(agent, 'open it', { retry: false }).subscribe();
        const cancel = new CancelSignal();
        const labels: string[] = [];
        const when = s.cancel;
        const start = s.openBreaker ? 10 : 0;
        if (typeof when === 'number') ts.schedule(() => cancel.cancel('stop'), start + when);
        ts.schedule(() => {
          run(agent, 'go', { cancel, ...s.options }).subscribe((e) => {
            labels.push(eventLabel(e));
            if (typeof when === 'number' || e.type !== when.on) return;
            if (when.later) ts.schedule(() => cancel.cancel('stop'), 0);
            else cancel.cancel('stop');
          });
        }, start);
        flush();
        expect(labels.at(-1)).toBe(`run_cancelled:${phase}`);
        expect(ts.actions).toEqual([]); // the wait was torn down: nothing is left scheduled
        if (phase === 'turn_entry') expect(labels).toEqual(['run_started', 'run_cancelled:turn_entry']);
      });
    });
  }
});

const overloaded = new ModelCallError('overloaded', { status: 529, retryable: true });
