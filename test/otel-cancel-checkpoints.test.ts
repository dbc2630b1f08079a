/**
 * loopctl/otel on a run cancelled at each of the twelve checkpoints (docs/telemetry.md, "A
 * cancelled run"): the run's span carries `loopctl.stop_reason: cancelled`, the phase and the
 * reason, and no error status ("cancelled is not failed"); what was cut short ends interrupted;
 * every span ends exactly once. The scenarios are those of marbles/phase.test.ts.
 */
import { Observable } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  CancelSignal,
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
import { scriptedModel, type ScriptedStep } from '../src/testing/index.js';
import { otelHarness } from './support/otel.js';

interface Scenario {
  readonly agent: Partial<AgentDefinition> & { steps?: (ScriptedStep | string)[] };
  readonly options?: RunOptions;
  readonly cancel: number | { readonly on: RunEvent['type']; readonly later?: true };
  readonly openBreaker?: true;
  /** The cancelled run's span tree (see `shape()`), below its root. */
  readonly spans: string[];
}

type Cold = TestScheduler['createColdObservable'];
const overloaded = new ModelCallError('overloaded', { status: 529, retryable: true });
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

const scenarios: Record<CancelPhase, (cold: Cold) => Scenario> = {
  turn_entry: () => ({ agent: { steps: ['never'] }, cancel: { on: 'run_started', later: true }, spans: [] }),
  session_load: (cold) => {
    const session = Object.assign(new MemorySession(), { load: () => cold('-----(h|)', { h: [] }) });
    return { agent: { steps: ['never'] }, options: { session }, cancel: 3, spans: [] };
  },
  model_request: () => ({
    agent: { steps: [{ text: 'late', delayMs: 10 }] },
    cancel: 3,
    spans: ['  chat scripted ~interrupted'],
  }),
  model_stream: (cold) => {
    const stream = () => cold<ModelEvent>('-a-------(r|)', { a: delta('a'), r: answer('a') });
    return { agent: { steps: [{ events: stream }] }, cancel: 3, spans: ['  chat scripted ~interrupted'] };
  },
  stream_gate: () => {
    const breaker = { failureThreshold: 1, cooldownMs: 100 };
    // Held at the gate before any request: no chat span.
    return { agent: { steps: [{ error: overloaded }, 'never'], breaker }, cancel: 50, openBreaker: true, spans: [] };
  },
  rescue: (cold) => {
    const broken = () => cold<ModelEvent>('-a-#', { a: delta('a') }, overloaded);
    const rescue = () => cold<ModelEvent>('-----(r|)', { r: answer('rescued') });
    return {
      agent: { steps: [{ events: broken }, { events: rescue }] },
      cancel: 5,
      spans: ['  chat scripted !ERROR(ModelCallError)', '  chat scripted ~interrupted'],
    };
  },
  backoff: () => {
    const options = { retry: { initialDelayMs: 1000 }, random: () => 0.5 };
    return {
      agent: { steps: [{ error: overloaded, delayMs: 1 }, 'never'] },
      options,
      cancel: 100,
      spans: ['  chat scripted !ERROR(ModelCallError)'],
    };
  },
  dispatch: () => ({
    agent: { steps: [twoCalls] },
    cancel: { on: 'model_response_completed' },
    spans: ['  chat scripted'],
  }),
  between_tools: () => ({
    agent: { steps: [twoCalls] },
    cancel: { on: 'tool_call_completed' },
    spans: ['  chat scripted', '  execute_tool a'],
  }),
  wave_boundary: () => ({
    agent: { steps: [twoCalls], parallelToolCalls: { maxConcurrency: 1 } },
    cancel: { on: 'tool_call_completed' },
    spans: ['  chat scripted', '  execute_tool a'],
  }),
  tool_call: () => ({
    agent: { steps: [{ toolCalls: [{ name: 'slow' }], delayMs: 1 }] },
    cancel: 4,
    spans: ['  chat scripted', '  execute_tool slow ~interrupted'],
  }),
  hook: (cold) => {
    const hooks = { turnStarted: () => cold('-----h|', { h: undefined }) };
    return { agent: { steps: ['never'], hooks }, cancel: 3, spans: [] };
  },
  approval: () => ({
    agent: { steps: [{ toolCalls: [{ name: 'gated' }], delayMs: 1 }] },
    cancel: 4,
    spans: ['  chat scripted'],
  }),
  // the summary's model call is a chat span like any other, cut by the cancel
  compaction: () => ({
    agent: { steps: [{ text: 'the summary', delayMs: 10 }], ...compacting },
    options: { session: new MemorySession(longHistory()) },
    cancel: 3,
    spans: ['  chat scripted ~interrupted'],
  }),
};

describe('a run cancelled at each checkpoint: its spans', () => {
  for (const [phase, make] of Object.entries(scenarios) as [CancelPhase, (cold: Cold) => Scenario][]) {
    it(phase, async () => {
      const h = otelHarness();
      const ts = new TestScheduler((a, b) => expect(a).toEqual(b));
      let s!: Scenario;
      ts.run(({ cold, flush }) => {
        s = make(cold.bind(ts) as Cold);
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
        if (s.openBreaker) run(agent, 'open it', { retry: false }).subscribe(); // not traced
        const cancel = new CancelSignal();
        const when = s.cancel;
        const start = s.openBreaker ? 10 : 0;
        if (typeof when === 'number') ts.schedule(() => cancel.cancel('stop'), start + when);
        ts.schedule(() => {
          run(agent, 'go', { cancel, telemetry: h.telemetry, ...s.options }).subscribe((e) => {
            if (typeof when === 'number' || e.type !== when.on) return;
            if (when.later) ts.schedule(() => cancel.cancel('stop'), 0);
            else cancel.cancel('stop');
          });
        }, start);
        flush();
      });
      // The run span's own events: the retry before a backoff; the request of a call still awaiting approval
      // (a cancel of the run decides nothing, so no loopctl.approval.decided follows).
      const retry =
        phase === 'backoff' ? ' +loopctl.retry' : phase === 'approval' ? ' +loopctl.approval.requested' : '';
      expect(h.shape()).toEqual([`invoke_agent p${retry}`, ...s.spans]);
      const [root] = h.tree();
      expect(root!.status).toBeUndefined(); // cancelled is not failed
      expect(root!.attributes).toMatchObject({
        'loopctl.stop_reason': 'cancelled',
        'loopctl.cancel.phase': phase,
        'loopctl.cancel.reason': 'stop',
      });
      expect(root!.attributes['error.type']).toBeUndefined();
      expect(h.endings()).toMatchObject({ open: [], twice: [] });
      expect(await h.metric('loopctl.cancel.duration')).toEqual([
        { attributes: { 'gen_ai.agent.name': 'p', 'loopctl.cancel.phase': phase }, count: 1, sum: expect.any(Number) },
      ]);
    });
  }
});
