import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  ConfigurationError,
  ResumeError,
  defineAgent,
  resume,
  start,
  tool,
  type RunEvent,
  type Suspended,
} from '../src/index.js';
import { scriptedModel, sequentialIds } from '../src/testing/index.js';

/**
 * Front-end tools in the library (docs/run-control.md, "Front-end tools"): the `frontendTools` run option is
 * validated with the field named; a call to one suspends the run in either approvals mode, with a gated call
 * of the same batch pending beside it; `suspended.frontend` is sealed; `resume` takes `{ result }` for a
 * front-end call only, and an approval for the others only; the model reads the client's result.
 */
const suspensionKey = 'frontend-tools-spec-key-32-bytes';
const executions: string[] = [];
const gated = tool({
  name: 'gated',
  description: 'g',
  parameters: z.object({}),
  needsApproval: true,
  execute: (_a, ctx) => (executions.push(`gated:${ctx.callId}`), 'G'),
});
const PICK = { name: 'pick', description: 'The user picks.', parameters: { type: 'object', properties: {} } };

function agentOf(calls: { name: string; callId: string }[]) {
  const model = scriptedModel([{ toolCalls: calls }, 'finished']);
  return { agent: defineAgent({ name: 'ops', instructions: '', tools: [gated], model }), model };
}

async function suspend(approvals: 'wait' | 'suspend', calls = [{ name: 'pick', callId: 'p1' }]) {
  const { agent, model } = agentOf(calls);
  const options = { approvals, suspensionKey, idGenerator: sequentialIds(), frontendTools: [PICK] };
  const result = await start(agent, 'go', options).result;
  return { agent, model, options, suspended: JSON.parse(JSON.stringify(result.suspended)) as Suspended };
}

describe('front-end tools (library)', () => {
  it('a bad frontendTools value is a ConfigurationError naming the entry field', () => {
    const { agent } = agentOf([]);
    const cases: [unknown, string][] = [
      ['pick', 'options.frontendTools'],
      [[{ name: 'a b', description: '' }], 'options.frontendTools[0].name'],
      [[PICK, PICK], 'options.frontendTools[1].name'],
      [[{ name: 'x' }], 'options.frontendTools[0].description'],
      [[{ name: 'x', description: '', parameters: [] }], 'options.frontendTools[0].parameters'],
      [[{ name: 'gated', description: '' }], 'options.frontendTools[0].name'],
    ];
    for (const [frontendTools, field] of cases) {
      let error: unknown;
      try {
        start(agent, 'go', { frontendTools: frontendTools as never });
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(ConfigurationError);
      expect((error as ConfigurationError).field).toBe(field);
    }
  });

  it('in wait mode a call to one suspends the run; a gated call of its batch is pending beside it', async () => {
    const events: RunEvent['type'][] = [];
    const { agent } = agentOf([
      { name: 'gated', callId: 'g1' },
      { name: 'pick', callId: 'p1' },
    ]);
    const handle = start(agent, 'go', { suspensionKey, frontendTools: [PICK] });
    handle.events$.subscribe((e) => events.push(e.type));
    const { suspended, stopReason } = await handle.result;
    expect(stopReason).toBe('needs_approval');
    expect(suspended?.pending.map((c) => c.callId)).toEqual(['g1', 'p1']);
    expect(suspended?.frontend).toEqual(['p1']);
    // The gated call asked for approval; the front-end call asks nothing: the client answers it.
    expect(events.filter((t) => t === 'tool_approval_requested')).toHaveLength(1);
    const resumed = resume(agent, suspended!, { g1: { approve: true }, p1: { result: 'blue' } }, { suspensionKey });
    expect((await resumed.result).output).toBe('finished');
    expect(executions).toContain('gated:g1');
  });

  it('resume: { result } only for a front-end call, an approval only for the others; the model reads the result', async () => {
    const { agent, model, suspended, options } = await suspend('suspend', [
      { name: 'gated', callId: 'g1' },
      { name: 'pick', callId: 'p1' },
    ]);
    const refused = (decisions: Record<string, unknown>) => {
      try {
        resume(agent, suspended, decisions as never, options);
      } catch (e) {
        return (e as ConfigurationError).field;
      }
      return 'accepted';
    };
    expect(refused({ g1: { approve: true }, p1: { approve: true } })).toBe('decisions.p1');
    expect(refused({ g1: { result: 'x' }, p1: { result: 'x' } })).toBe('decisions.g1');
    // A result and a rejection at once is neither: the rejection is never ignored, the result never taken.
    const approveG1 = { approve: true };
    expect(refused({ g1: approveG1, p1: { result: 'red', approve: false } })).toBe('decisions.p1');
    expect(refused({ g1: approveG1, p1: { result: 'red', approve: false, reason: 'no' } })).toBe('decisions.p1');
    expect(refused({ g1: approveG1, p1: { result: 'red', extra: 1 } })).toBe('decisions.p1');
    const handle = resume(agent, suspended, { g1: { approve: false, reason: 'no' }, p1: { result: 'blue' } }, options);
    expect((await handle.result).output).toBe('finished');
    const results = model.requests[1]!.items.filter((i) => i.type === 'tool_result');
    expect(results.map((r) => [r.callId, r.output])).toEqual([
      ['g1', 'Error: the call was rejected: no'],
      ['p1', 'blue'],
    ]);
  });

  it('suspended.frontend is sealed: dropping it or naming another call is refused, nothing runs', async () => {
    const { agent, suspended, options } = await suspend('suspend', [
      { name: 'gated', callId: 'g1' },
      { name: 'pick', callId: 'p1' },
    ]);
    const before = executions.length;
    const dropped = { ...suspended, frontend: undefined };
    const swapped = { ...suspended, frontend: ['g1'] };
    for (const [s, decisions] of [
      [dropped, { g1: { approve: true }, p1: { approve: true } }],
      [swapped, { g1: { result: 'x' }, p1: { approve: true } }],
    ] as const) {
      expect(() => resume(agent, s as Suspended, decisions as never, options)).toThrow(ResumeError);
      try {
        resume(agent, s as Suspended, decisions as never, options);
      } catch (e) {
        expect((e as ResumeError).code).toBe('tampered');
      }
    }
    expect(executions.length).toBe(before);
  });
});
