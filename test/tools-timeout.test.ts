import { NEVER, VirtualTimeScheduler, finalize, timer, map } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { CancelSignal, defineAgent, run, tool, type RunEvent, type Tool, type ToolResultItem } from '../src/index.js';
import { collectEvents, scriptedModel } from '../src/testing/index.js';

/**
 * Per-tool timeouts (the `Tool.timeoutMs` doc comment, docs/recovery.md
 * deadlines): `tool.timeoutMs`, else
 * `options.deadlines.toolMs`. On expiry `ctx.signal` aborts with a
 * `TimeoutError`, a `tool_call_failed` is emitted, the model gets a tool
 * error, and the run goes on: never `run_cancelled`.
 */
function setup(t: Tool) {
  const model = scriptedModel([{ toolCalls: [{ name: t.name, callId: 'c1' }] }, 'recovered']);
  return { model, agent: defineAgent({ name: 'to', instructions: '', model, tools: [t] }) };
}

function virtualRun(t: Tool, options: Parameters<typeof run>[2] = {}) {
  const scheduler = new VirtualTimeScheduler();
  const { model, agent } = setup(t);
  const events: RunEvent[] = [];
  run(agent, 'go', { ...options, scheduler }).subscribe((e) => events.push(e));
  scheduler.flush();
  return { model, events, scheduler };
}

const lastResult = (model: ReturnType<typeof scriptedModel>) => model.requests[1]!.items.at(-1) as ToolResultItem;

describe('per-tool timeouts, virtual time', () => {
  for (const source of ['tool.timeoutMs', 'deadlines.toolMs'] as const) {
    it(`${source}: ctx.signal aborts with a TimeoutError, tool_call_failed, a tool error for the model, the run completes`, () => {
      let signal: AbortSignal | undefined;
      let torndown = false;
      const t = tool({
        name: 'stuck',
        description: '',
        parameters: z.object({}),
        ...(source === 'tool.timeoutMs' ? { timeoutMs: 30 } : {}),
        execute: (_a, ctx) => ((signal = ctx.signal), NEVER.pipe(finalize(() => (torndown = true)))),
      });
      const cancel = new CancelSignal();
      const { model, events, scheduler } = virtualRun(t, {
        cancel,
        ...(source === 'deadlines.toolMs' ? { deadlines: { toolMs: 30 } } : {}),
      });
      expect(signal!.aborted).toBe(true);
      expect((signal!.reason as Error).name).toBe('TimeoutError');
      expect(signal!.reason).toMatchObject({ kind: 'tool', timeoutMs: 30 });
      expect(torndown).toBe(true);
      const failed = events.find((e) => e.type === 'tool_call_failed');
      expect(failed).toMatchObject({
        callId: 'c1',
        name: 'stuck',
        error: { name: 'TimeoutError', kind: 'tool', timeoutMs: 30 },
        interrupted: false,
        at: 30,
      });
      expect(lastResult(model)).toEqual({
        type: 'tool_result',
        callId: 'c1',
        output: 'Error: tool stuck timed out after 30 ms',
        isError: true,
      });
      expect(events.at(-1)).toMatchObject({ type: 'run_completed', output: 'recovered' });
      expect(events.some((e) => e.type === 'run_cancelled')).toBe(false);
      expect(cancel.isCancelled).toBe(false);
      expect(scheduler.actions).toHaveLength(0);
    });
  }

  it("a tool's own timeoutMs wins over deadlines.toolMs", () => {
    const t = tool({ name: 'stuck', description: '', parameters: z.object({}), timeoutMs: 50, execute: () => NEVER });
    const { events } = virtualRun(t, { deadlines: { toolMs: 10 } });
    expect(events.find((e) => e.type === 'tool_call_failed')).toMatchObject({ at: 50, error: { timeoutMs: 50 } });
  });

  it('a tool that finishes in time: no timeout, its timer is released, the signal is never aborted', () => {
    let signal: AbortSignal | undefined;
    const scheduler = new VirtualTimeScheduler();
    const t = tool({
      name: 'quick',
      description: '',
      parameters: z.object({}),
      timeoutMs: 30,
      execute: (_a, ctx) => ((signal = ctx.signal), timer(29, scheduler).pipe(map(() => 'in time'))),
    });
    const { model, agent } = setup(t);
    const events: RunEvent[] = [];
    run(agent, 'go', { scheduler }).subscribe((e) => events.push(e));
    scheduler.flush();
    expect(lastResult(model)).toEqual({ type: 'tool_result', callId: 'c1', output: 'in time', isError: false });
    expect(signal!.aborted).toBe(false);
    expect(events.at(-1)!.type).toBe('run_completed');
    expect(scheduler.actions).toHaveLength(0);
  });
});

// The real-clock counterpart of the virtual-time specs above: the same timeouts on the default asyncScheduler,
// so the short real waits here are the point, not a shortcut.
describe('per-tool timeouts, real time', () => {
  it('a Promise tool that ignores its signal is abandoned at the timeout; its late result is ignored', async () => {
    let signal: AbortSignal | undefined;
    let resolveLate!: (v: string) => void;
    const t = tool({
      name: 'deaf',
      description: '',
      parameters: z.object({}),
      timeoutMs: 10,
      execute: (_a, ctx) => ((signal = ctx.signal), new Promise<string>((r) => (resolveLate = r))),
    });
    const { model, agent } = setup(t);
    const events = await collectEvents(run(agent, 'go'));
    expect((signal!.reason as Error).name).toBe('TimeoutError');
    expect(lastResult(model)).toMatchObject({ output: 'Error: tool deaf timed out after 10 ms', isError: true });
    expect(events.at(-1)!.type).toBe('run_completed');
    const count = events.length;
    resolveLate('too late');
    // Whatever the late value sets off runs in its microtasks, all done before the next turn of the event loop.
    await new Promise((r) => setImmediate(r));
    expect(events).toHaveLength(count);
  });

  it('a tool that rejects with the abort reason when its signal fires: still a timeout tool error, not a cancel', async () => {
    const t = tool({
      name: 'polite',
      description: '',
      parameters: z.object({}),
      timeoutMs: 10,
      execute: (_a, ctx) =>
        new Promise<string>((_r, reject) => ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason))),
    });
    const { model, agent } = setup(t);
    const events = await collectEvents(run(agent, 'go'));
    expect(events.find((e) => e.type === 'tool_call_failed')).toMatchObject({ error: { name: 'TimeoutError' } });
    expect(lastResult(model)).toMatchObject({ output: 'Error: tool polite timed out after 10 ms', isError: true });
    expect(events.at(-1)!.type).toBe('run_completed');
  });
});
