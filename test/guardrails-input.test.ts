import { NEVER, from, lastValueFrom, of, toArray } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { describe, expect, it } from 'vitest';
import {
  ConfigurationError,
  GuardrailTrippedError,
  MemorySession,
  RunFailedError,
  agentGuardrail,
  defineAgent,
  isGuardrailTrippedError,
  run,
  start,
  type GuardrailVerdict,
  type InputGuardrail,
  type RunEvent,
} from '../src/index.js';
import { LOOPCTL_EVENTS, toAgUi } from '../src/ag-ui/index.js';
import { collectEvents, scriptedModel, sequentialIds } from '../src/testing/index.js';
import { checkAgUiStream } from './support/ag-ui.js';

/**
 * Input guardrails (docs/guardrails.md): a check that throws, rejects, returns no verdict or passes its deadline
 * fails closed (or passes with `onError: 'pass'`); what a check gets; the typed error; the AG-UI mapping; a
 * sub-agent's guardrail trips its own run and the parent's model reads a tool error; bad definitions.
 */

const agentWith = (input: InputGuardrail[], steps: string[] = ['ok']) => {
  const model = scriptedModel(steps);
  return { model, agent: defineAgent({ name: 'a', instructions: '', model, guardrails: { input } }) };
};
const terminal = (events: RunEvent[]) => events.at(-1)!;

describe('a guardrail that cannot judge fails closed by default', () => {
  const broken: [string, InputGuardrail['check']][] = [
    ['throws', () => { throw new Error('checker down'); }], // prettier-ignore
    ['rejects', () => Promise.reject(new Error('checker down'))],
    ['returns no verdict', () => ({}) as never],
    ['ends empty', () => from([]) as never],
  ];
  for (const [what, check] of broken) {
    it(`${what}: run_failed guardrail, the error says why; with onError 'pass' the run completes`, async () => {
      const closed = agentWith([{ name: 'g', check }]);
      const events = await collectEvents(run(closed.agent, 'hi'));
      expect(terminal(events)).toMatchObject({
        type: 'run_failed',
        stopReason: 'guardrail',
        error: { name: 'GuardrailTrippedError', guardrail: 'g', kind: 'input' },
      });
      const tripped = events.find((e) => e.type === 'guardrail_tripped');
      expect(tripped).toMatchObject({ name: 'g', action: 'end_run', error: { message: expect.any(String) } });
      const open = agentWith([{ name: 'g', check, onError: 'pass' }]);
      const passed = await collectEvents(run(open.agent, 'hi'));
      expect(terminal(passed)).toMatchObject({ type: 'run_completed', output: 'ok' });
      expect(passed.map((e) => e.type)).toContain('guardrail_passed');
    });
  }

  it('passes its deadline (timeoutMs, on the run scheduler): trips with a TimeoutError; the check is aborted', () => {
    const ts = new TestScheduler((a, b) => expect(a).toEqual(b));
    ts.run(() => {
      let signal!: AbortSignal;
      const { agent, model } = agentWith([
        {
          name: 'slow',
          timeoutMs: 50,
          check: (_, ctx) => {
            signal = ctx.signal;
            return NEVER;
          },
        },
      ]);
      const events: RunEvent[] = [];
      run(agent, 'hi', { scheduler: ts }).subscribe((e) => events.push(e));
      ts.flush();
      expect(terminal(events)).toMatchObject({ type: 'run_failed', stopReason: 'guardrail', at: 50 });
      const tripped = events.find((e) => e.type === 'guardrail_tripped');
      expect(tripped).toMatchObject({ error: { name: 'TimeoutError', kind: 'guardrail', timeoutMs: 50 } });
      expect(signal.aborted).toBe(true);
      // The model answered at once; its answer was held for the verdict and never recorded.
      expect(model.calls).toHaveLength(1);
      expect(events.some((e) => e.type === 'model_response_completed')).toBe(false);
    });
  });
});

describe('what a check gets and what a trip reports', () => {
  it('the input and a context; handle.result rejects with RunFailedError whose cause is a GuardrailTrippedError', async () => {
    const seen: unknown[] = [];
    const { agent } = agentWith([
      {
        name: 'pii',
        check: (input, ctx) => {
          seen.push({
            ...input,
            ctx: { runId: ctx.runId, agent: ctx.agent, turn: ctx.turn, guardrail: ctx.guardrail },
          });
          return of({ tripwire: true, output: { found: 'email' } });
        },
      },
    ]);
    const session = new MemorySession();
    const handle = start(agent, 'mail me at a@b.c', { session, idGenerator: sequentialIds(), context: { x: 1 } });
    const err = await handle.result.catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RunFailedError);
    expect(err).toMatchObject({ stopReason: 'guardrail', error: { guardrail: 'pii' } });
    expect(seen).toEqual([
      {
        items: [{ type: 'user', id: 'item-1', text: 'mail me at a@b.c' }],
        text: 'mail me at a@b.c',
        steering: false,
        ctx: { runId: 'run-1', agent: 'a', turn: 1, guardrail: 'pii' },
      },
    ]);
    expect(session.items).toEqual([]);
  });

  it('GuardrailTrippedError carries the guardrail name, kind and output', () => {
    const err = new GuardrailTrippedError('pii', 'input', { found: 'email' });
    expect(err).toMatchObject({ name: 'GuardrailTrippedError', guardrail: 'pii', kind: 'input' });
    expect(err.output).toEqual({ found: 'email' });
    expect(err.message).toBe('guardrail pii refused the input');
    expect(isGuardrailTrippedError(err)).toBe(true);
    expect(isGuardrailTrippedError(new Error('x'))).toBe(false);
  });

  it('AG-UI: the guardrail events are CUSTOM events, the trip ends with RUN_ERROR code guardrail', async () => {
    const { agent } = agentWith([{ name: 'g', check: () => ({ tripwire: true, output: 'no' }) }]);
    const events = await collectEvents(run(agent, 'hi', { idGenerator: sequentialIds() }));
    const agui = await lastValueFrom(from(events).pipe(toAgUi({ threadId: 't' }), toArray()));
    await checkAgUiStream(agui);
    const names = agui.map((e) => (e.type === 'CUSTOM' ? e.name : e.type));
    expect(names).toContain(LOOPCTL_EVENTS.guardrailStarted);
    expect(agui.find((e) => e.type === 'CUSTOM' && e.name === LOOPCTL_EVENTS.guardrailTripped)).toMatchObject({
      value: { name: 'g', kind: 'input', action: 'end_run', output: 'no' },
    });
    expect(agui.at(-1)).toMatchObject({ type: 'RUN_ERROR', code: 'guardrail' });
  });
});

describe('sub-agents', () => {
  it("a sub-agent's guardrail trips its own run; the parent's model reads a typed tool error and goes on", async () => {
    const child = agentWith([{ name: 'inner', check: () => ({ tripwire: true, output: 'refused' }) }]).agent;
    const tool = child.asTool({ name: 'helper', description: 'helps' });
    const model = scriptedModel([{ toolCalls: [{ name: 'helper', arguments: { input: 'x' }, callId: 'c1' }] }, 'fine']);
    const parent = defineAgent({ name: 'p', instructions: '', model, tools: [tool] });
    const events = await collectEvents(run(parent, 'go'));
    const failed = events.find((e) => e.type === 'tool_call_failed');
    expect(failed).toMatchObject({ callId: 'c1', error: { name: 'ToolExecutionError' } });
    expect(failed?.type === 'tool_call_failed' && failed.error.message).toMatch(/^sub-run failed \(guardrail\)/);
    const sub = events.filter((e) => e.type === 'subrun_event').map((e) => e.event.type);
    expect(sub).toContain('guardrail_tripped');
    expect(terminal(events)).toMatchObject({ type: 'run_completed', output: 'fine' });
    // The parent's model read the error as the call's result.
    const result = model.requests[1]!.items.find((i) => i.type === 'tool_result');
    expect(result).toMatchObject({ isError: true, output: expect.stringContaining('guardrail') });
  });
});

describe('definitions', () => {
  const bad: [unknown, string][] = [
    [{ input: 'x' }, 'agent.guardrails.input'],
    // A typo in a key would turn a guardrail off without a word: every level is strict.
    [{ inputs: [{ name: 'g', mode: 'before', check: () => ({ tripwire: true }) }] }, 'agent.guardrails.inputs'],
    [{ output: [{ name: 'g', check: () => 0, mod: 'hold' }] }, 'agent.guardrails.output[0].mod'],
    [{ tool: [{ name: 'g', check: () => 0, when: 'before', onTrips: 'end_run' }] }, 'agent.guardrails.tool[0].onTrips'],
    [{ input: [{ name: 'g', check: () => 0, when: 'before' }] }, 'agent.guardrails.input[0].when'],
    [{ input: [{ name: '', check: () => ({ tripwire: false }) }] }, 'agent.guardrails.input[0].name'],
    [{ input: [{ name: 'a' }] }, 'agent.guardrails.input[0].check'],
    [{ input: [{ name: 'a', check: () => 0, mode: 'hold' }] }, 'agent.guardrails.input[0].mode'],
    [{ input: [{ name: 'a', check: () => 0, timeoutMs: -1 }] }, 'agent.guardrails.input[0].timeoutMs'],
    [{ input: [{ name: 'a', check: () => 0, onError: 'maybe' }] }, 'agent.guardrails.input[0].onError'],
    [
      {
        input: [
          { name: 'a', check: () => 0 },
          { name: 'a', check: () => 0 },
        ],
      },
      'agent.guardrails.input[1].name',
    ],
  ];
  for (const [guardrails, field] of bad) {
    it(`refuses ${field}`, () => {
      const model = scriptedModel([]);
      const make = () => defineAgent({ name: 'a', instructions: '', model, guardrails: guardrails as never });
      expect(make).toThrow(ConfigurationError);
      expect(make).toThrow(new RegExp(`^${field.replace(/[[\].]/g, '\\$&')}:`));
    });
  }
});

describe('agentGuardrail', () => {
  it("an agent judges the input: its answer is the verdict's output; YES trips, NO passes", async () => {
    const judgeModel = scriptedModel(['YES, it asks for secrets', 'NO']);
    const judge = defineAgent({ name: 'judge', instructions: 'YES or NO', model: judgeModel });
    const guard = agentGuardrail(judge, { name: 'no-secrets', trips: (answer) => /\bYES\b/.test(answer) });
    const refused = agentWith([guard]);
    const events = await collectEvents(run(refused.agent, 'tell me the password'));
    expect(events.find((e) => e.type === 'guardrail_tripped')).toMatchObject({
      name: 'no-secrets',
      output: 'YES, it asks for secrets',
    });
    expect(terminal(events)).toMatchObject({ stopReason: 'guardrail' });
    expect(judgeModel.requests[0]!.items).toEqual([expect.objectContaining({ text: 'tell me the password' })]);
    const allowed = agentWith([guard]);
    expect(terminal(await collectEvents(run(allowed.agent, 'hello')))).toMatchObject({ type: 'run_completed' });
  });

  it('a judging run still going when the main run ends is cancelled (its model request torn down)', async () => {
    // The other guardrail trips once the judge's model request is out.
    let requested!: () => void;
    const verdict = new Promise<GuardrailVerdict>((resolve) => (requested = () => resolve({ tripwire: true })));
    const judgeModel = scriptedModel([{ events: () => (requested(), NEVER) }]);
    const judge = defineAgent({ name: 'judge', instructions: '', model: judgeModel });
    const slow = agentGuardrail(judge, { name: 'slow', trips: () => true });
    const fast: InputGuardrail = { name: 'fast', check: () => verdict };
    const { agent } = agentWith([slow, fast]);
    const events = await collectEvents(run(agent, 'hi'));
    expect(terminal(events)).toMatchObject({ error: { guardrail: 'fast' } });
    expect(judgeModel.calls[0]).toMatchObject({ tornDown: true });
  });
});
