import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  ConfigurationError,
  RunControl,
  defineAgent,
  localRuns,
  run,
  start,
  tool,
  type RunEvent,
  type ToolContext,
} from '../src/index.js';
import { gate, scriptedModel } from '../src/testing/index.js';

/**
 * RunControl (docs/run-control.md): what it accepts and refuses, one live run per control, a handle's
 * own control, a sub-run cancelled on its child token by a per-call cancel, and `localRuns().stop`.
 */
const slowTool = (entered: { open(): void }, seen: ToolContext[] = []) =>
  tool({
    name: 'slow',
    description: 'slow',
    parameters: z.object({}),
    execute: (_a, ctx) => {
      seen.push(ctx);
      entered.open();
      return new Promise<string>((resolve) => ctx.signal.addEventListener('abort', () => resolve('aborted')));
    },
  });

describe('RunControl: bad input is a typed error naming the field', () => {
  const control = new RunControl();
  it.each([
    [{ at: 'now' }, 'at'],
    [{ at: 7 }, 'at'],
    [{ graceMs: -1 }, 'graceMs'],
    [{ graceMs: Number.NaN }, 'graceMs'],
    [{ graceMs: '5' }, 'graceMs'],
    [null, 'options'],
  ])('stop(%j) → ConfigurationError(%s)', (options, field) => {
    expect(() => control.stop(options as never)).toThrow(ConfigurationError);
    try {
      control.stop(options as never);
    } catch (err) {
      expect((err as ConfigurationError).field).toBe(field);
    }
  });

  it('cancelToolCall with a callId that is not a non-empty string → ConfigurationError(callId)', () => {
    for (const id of ['', 3, undefined]) {
      expect(() => control.cancelToolCall(id as never)).toThrow(expect.objectContaining({ field: 'callId' }));
    }
  });

  it('well-formed requests with no live run answer false', () => {
    expect(control.stop()).toBe(false);
    expect(control.stop({ at: 'tool_call_end', graceMs: 0 })).toBe(false);
    expect(control.cancelToolCall('call-1', 'why')).toBe(false);
  });

  it('options.control that is not a RunControl is refused by run() and start(), naming options.control', () => {
    const agent = defineAgent({ name: 'a', instructions: '', model: scriptedModel(['x']) });
    for (const bad of [{}, { stop() {} }, 'control']) {
      expect(() => run(agent, 'go', { control: bad as never })).toThrow(
        expect.objectContaining({ field: 'options.control' }),
      );
      expect(() => start(agent, 'go', { control: bad as never })).toThrow(
        expect.objectContaining({ field: 'options.control' }),
      );
    }
  });
});

describe('RunControl: one live run per control', () => {
  it('a second run given a control in use ends run_failed (configuration_error), the first is unaffected', async () => {
    const entered = gate();
    const agent = defineAgent({
      name: 'a',
      instructions: '',
      tools: [slowTool(entered)],
      model: scriptedModel([{ toolCalls: [{ name: 'slow', callId: 'c1' }] }, 'first done']),
    });
    const control = new RunControl();
    const first = start(agent, 'go', { control });
    await entered.promise;
    const second = start(agent, 'go', { control });
    await expect(second.result).rejects.toMatchObject({ stopReason: 'configuration_error' });
    expect(first.control).toBe(control);
    expect(control.stop()).toBe(true); // still the first run's
    expect(first.cancelToolCall('nope')).toBe(false);
    expect(first.cancelToolCall('c1')).toBe(true); // the boundary comes: the turn's only call is over
    await expect(first.result).resolves.toMatchObject({ stopReason: 'stopped' });
    // Free again once the run has ended.
    const third = start(defineAgent({ name: 'b', instructions: '', model: scriptedModel(['ok']) }), 'go', { control });
    await expect(third.result).resolves.toMatchObject({ stopReason: 'completed', output: 'ok' });
  });
});

describe('RunHandle: stop and cancelToolCall delegate to its own RunControl', () => {
  it('a handle without options.control has a control of its own; stop ends the run stopped, once', async () => {
    const entered = gate();
    const agent = defineAgent({
      name: 'a',
      instructions: '',
      tools: [slowTool(entered)],
      model: scriptedModel([{ text: 'on it', toolCalls: [{ name: 'slow', callId: 'c1' }] }, 'never']),
    });
    const handle = start(agent, 'go');
    expect(handle.control).toBeInstanceOf(RunControl);
    await entered.promise;
    expect(handle.stop({ at: 'turn_end' })).toBe(true);
    expect(handle.stop()).toBe(false);
    expect(handle.control.stop()).toBe(false);
    expect(handle.cancelToolCall('c1', 'enough')).toBe(true);
    const result = await handle.result;
    expect(result).toMatchObject({ stopReason: 'stopped', output: 'on it', finishReason: 'tool_calls' });
    expect(result.items.at(-1)).toMatchObject({ callId: 'c1', output: 'Error: cancelled by the user: enough' });
  });
});

describe('per-call cancel of a sub-run tool', () => {
  it('the sub-run is cancelled on its own child token with the reason; the parent goes on', async () => {
    const entered = gate();
    const childModel = scriptedModel([{ toolCalls: [{ name: 'slow' }] }, 'never']);
    const child = defineAgent({ name: 'child', instructions: '', model: childModel, tools: [slowTool(entered)] });
    const parent = defineAgent({
      name: 'parent',
      instructions: '',
      model: scriptedModel([
        { toolCalls: [{ name: 'delegate', callId: 'd1', arguments: { input: 'x' } }] },
        'parent done',
      ]),
      tools: [child.asTool({ name: 'delegate', description: 'delegates' })],
    });
    const handle = start(parent, 'go');
    const events: RunEvent[] = [];
    handle.events$.subscribe((e) => events.push(e));
    await entered.promise;
    expect(handle.cancelToolCall('d1', 'not needed')).toBe(true);
    // Before cancelToolCall() returned: the child's run_cancelled (relayed), then the call's tool_call_failed.
    const childEnd = events.findIndex((e) => e.type === 'subrun_event' && e.event.type === 'run_cancelled');
    const failed = events.findIndex((e) => e.type === 'tool_call_failed');
    expect(childEnd).toBeGreaterThan(-1);
    expect(failed).toBeGreaterThan(childEnd);
    const relayed = events[childEnd] as Extract<RunEvent, { type: 'subrun_event' }>;
    expect(relayed.event).toMatchObject({ type: 'run_cancelled', reason: 'not needed', phase: 'tool_call' });
    expect(events[failed]).toMatchObject({ interrupted: true, error: { name: 'ToolCallCancelledError' } });
    await expect(handle.result).resolves.toMatchObject({ stopReason: 'completed', output: 'parent done' });
  });
});

describe('localRuns().stop', () => {
  it('stops a live run gracefully (true), false for a second stop and once it ended; bad input names the field', async () => {
    const entered = gate();
    const release = gate<string>();
    const work = tool({
      name: 'work',
      description: 'work',
      parameters: z.object({}),
      execute: () => (entered.open(), release.promise),
    });
    const agent = defineAgent({
      name: 'a',
      instructions: '',
      tools: [work],
      model: scriptedModel([{ text: 'step', toolCalls: [{ name: 'work', callId: 's1' }] }, 'never']),
    });
    const runs = localRuns({ agents: { a: agent } });
    const { runId } = await runs.start({ agent: 'a', threadId: 't', input: 'go', principal: 'p' });
    await entered.promise;
    await expect(runs.stop(runId, { at: 'bogus' as never }, 'p')).rejects.toMatchObject({ field: 'at' });
    await expect(runs.stop(runId, { at: 'turn_end', graceMs: -2 }, 'p')).rejects.toMatchObject({ field: 'graceMs' });
    await expect(runs.stop(runId, { at: 'turn_end' }, 'someone else')).rejects.toMatchObject({
      name: 'RunNotFoundError',
    });
    await expect(runs.stop(runId, { at: 'tool_call_end' }, 'p')).resolves.toBe(true);
    await expect(runs.stop(runId, { at: 'turn_end' }, 'p')).resolves.toBe(false);
    const events: RunEvent[] = [];
    const done = new Promise<void>((resolve) =>
      runs.events(runId, { principal: 'p' }).subscribe({ next: (e) => events.push(e), complete: resolve }),
    );
    release.open('worked');
    await done;
    expect(events.find((e) => e.type === 'stop_requested')).toMatchObject({ stopAt: 'tool_call_end' });
    expect(events.at(-1)).toMatchObject({ type: 'run_completed', stopReason: 'stopped', output: 'step' });
    await expect(runs.stop(runId, { at: 'turn_end' }, 'p')).resolves.toBe(false);
  });
});

describe('stop and structured output', () => {
  it('under a stop an invalid structured answer gets no repair turn: output_invalid, no further request', async () => {
    const release = gate();
    const model = scriptedModel([{ text: 'not json', gate: release.wait$ }, '{"n": 1}']);
    const agent = defineAgent({ name: 'a', instructions: '', model, output: z.object({ n: z.number() }) });
    const handle = start(agent, 'go');
    const taken: boolean[] = [];
    handle.events$.subscribe((e) => {
      if (e.type === 'model_request_started') taken.push(handle.stop());
    });
    release.open();
    await expect(handle.result).rejects.toMatchObject({ stopReason: 'output_invalid', output: 'not json' });
    expect(model.requests).toHaveLength(1);
    expect(taken).toEqual([true]);
  });

  it('under a stop a valid structured answer completes with its value', async () => {
    const release = gate();
    const model = scriptedModel([{ text: '{"n": 1}', gate: release.wait$ }]);
    const agent = defineAgent({ name: 'a', instructions: '', model, output: z.object({ n: z.number() }) });
    const handle = start(agent, 'go');
    handle.events$.subscribe((e) => {
      if (e.type === 'model_request_started') handle.stop({ at: 'tool_call_end' });
    });
    release.open();
    await expect(handle.result).resolves.toMatchObject({ stopReason: 'completed', value: { n: 1 } });
  });
});
