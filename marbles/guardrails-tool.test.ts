import { type Observable } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  MemorySession,
  defineAgent,
  run,
  tool,
  type GuardrailVerdict,
  type ToolGuardrail,
  type Tool,
} from '../src/index.js';
import { scriptedModel, type ScriptedStep } from '../src/testing/index.js';
import { observe } from './support/observe.js';

/**
 * Tool guardrails (docs/guardrails.md, "Tool guardrails") in virtual time: a check before the call (the tool runs
 * only after it passed; a refusal is the call's error result and the run goes on), a check of the result before the
 * model sees it, and a trip with `onTrip: 'end_run'` during a tool wave: the calls still running are torn down in
 * that frame, the run ends `guardrail`, nothing is kept.
 */
let ts: TestScheduler;
beforeEach(() => {
  ts = new TestScheduler((actual, expected) => expect(actual).toEqual(expected));
});

const PASS: GuardrailVerdict = { tripwire: false };
const TRIP: GuardrailVerdict = { tripwire: true, output: 'not allowed' };

function setup(guards: ToolGuardrail[], tools: Tool<any, any>[], steps: (ScriptedStep | string)[], parallel?: number) {
  const model = scriptedModel(steps);
  const agent = defineAgent({
    name: 't',
    instructions: '',
    model,
    tools,
    guardrails: { tool: guards },
    ...(parallel ? { parallelToolCalls: { maxConcurrency: parallel } } : {}),
  });
  return { model, agent, session: new MemorySession() };
}

const slowTool = (name: string, body: () => Observable<string>) =>
  tool({ name, description: name, parameters: z.object({ path: z.string() }), execute: () => body() });

describe('marbles: tool guardrails', () => {
  it("'before' refuses the arguments: the tool never runs, the model reads the refusal, the run goes on", () => {
    ts.run(({ cold, expectSubscriptions }) => {
      const body = cold('-x|', { x: 'written' });
      const write = slowTool('write', () => body);
      const guard: ToolGuardrail = {
        name: 'paths',
        when: 'before',
        check: (c) => cold('--v|', { v: (c.args as { path: string }).path.startsWith('/etc') ? TRIP : PASS }),
      };
      const step = { toolCalls: [{ name: 'write', callId: 'c1', arguments: { path: '/etc/passwd' } }] };
      const { agent, model, session } = setup([guard], [write], [step, 'ok, I will not']);
      const { log, events } = observe(ts, run(agent, 'go', { session }));
      ts.flush();
      expect(log.slice(3, 9)).toEqual([
        '0 model_response_completed',
        '0 tool_call_started:write',
        '0 guardrail_started',
        '2 guardrail_tripped',
        '2 tool_call_failed:write',
        '2 turn_completed',
      ]);
      expectSubscriptions(body.subscriptions).toBe([]);
      expect(events.find((e) => e.type === 'guardrail_tripped')).toMatchObject({
        kind: 'tool_before',
        callId: 'c1',
        action: 'reject_call',
        output: 'not allowed',
      });
      const result = model.requests[1]!.items.find((i) => i.type === 'tool_result');
      expect(result).toMatchObject({
        isError: true,
        output: "Error: guardrail paths refused the call's arguments; the call did not run",
      });
      expect(events.at(-1)).toMatchObject({ type: 'run_completed', output: 'ok, I will not' });
      expect(session.items.map((i) => i.type)).toEqual(['user', 'assistant', 'tool_result', 'assistant']);
    });
  });

  it("'after' refuses the result: the tool ran, its result never reaches the model", () => {
    ts.run(({ cold }) => {
      const read = slowTool('read', () => cold('-x|', { x: 'SECRET=hunter2' }));
      const guard: ToolGuardrail = {
        name: 'secrets',
        when: 'after',
        tools: ['read'],
        check: (c) => cold('-v|', { v: String(c.result).includes('SECRET') ? TRIP : PASS }),
      };
      const step = { toolCalls: [{ name: 'read', callId: 'c1', arguments: { path: '.env' } }] };
      const { agent, model } = setup([guard], [read], [step, 'done']);
      const { log, events } = observe(ts, run(agent, 'go'));
      ts.flush();
      expect(log.slice(4, 8)).toEqual([
        '0 tool_call_started:read',
        '2 guardrail_started', // the tool's result is its last value: at its completion
        '3 guardrail_tripped',
        '3 tool_call_failed:read',
      ]);
      expect(JSON.stringify(model.requests[1]!.items)).not.toContain('hunter2');
      expect(events.at(-1)).toMatchObject({ type: 'run_completed' });
    });
  });

  it("onTrip 'end_run' during a tool wave: the running call is torn down in that frame; nothing is kept", () => {
    ts.run(({ cold, expectSubscriptions }) => {
      const slow = cold('-----x|', { x: 'A' });
      const a = slowTool('a', () => slow);
      const b = slowTool('b', () => cold('-x|', { x: 'B' }));
      const guard: ToolGuardrail = {
        name: 'b-guard',
        when: 'before',
        tools: ['b'],
        onTrip: 'end_run',
        check: () => cold('--t|', { t: TRIP }),
      };
      const step = {
        toolCalls: [
          { name: 'a', callId: 'ca', arguments: { path: 'x' } },
          { name: 'b', callId: 'cb', arguments: { path: 'y' } },
        ],
      };
      const { agent, model, session } = setup([guard], [a, b], [step, 'never'], 2);
      const { log, events } = observe(ts, run(agent, 'go', { session }));
      ts.flush();
      expect(log.slice(-3)).toEqual(['0 guardrail_started', '2 guardrail_tripped', '2 run_failed:guardrail']);
      expectSubscriptions(slow.subscriptions).toBe('^-!');
      expect(model.requests).toHaveLength(1);
      expect(events.at(-1)).toMatchObject({
        stopReason: 'guardrail',
        error: { name: 'GuardrailTrippedError', guardrail: 'b-guard', kind: 'tool_before' },
      });
      expect(session.items).toEqual([]);
    });
  });
});
