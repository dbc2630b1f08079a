import { of } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  CancelSignal,
  RunCancelledError,
  defineAgent,
  isCancellation,
  run,
  start,
  tool,
  type RunEvent,
} from '../src/index.js';
import { collectEvents, gate, scriptedModel } from '../src/testing/index.js';
import { virtualTime } from './support/virtual-time.js';

/** Where a cancel can come from and what it must not do. */
const terminalOf = (events: RunEvent[]) => events.filter((e) => e.type.startsWith('run_') && e.type !== 'run_started');

/**
 * The token is cancelled before `start`; the run settles at once (checkpoint
 * 1: turn entry), the model is never asked and no tool runs.
 */
describe('a token cancelled before the run starts', () => {
  it('settles at once as cancelled: model never invoked, no tool, stream and result settle', async () => {
    const model = scriptedModel([{ text: ['would', ' stream'] }]);
    let toolRuns = 0;
    const t = tool({ name: 't', description: '', parameters: z.object({}), execute: () => ++toolRuns });
    const agent = defineAgent({ name: 'a', instructions: '', model, tools: [t] });
    const cancel = new CancelSignal();
    cancel.cancel('before start');
    const handle = start(agent, 'go', { cancel, stream: true });
    const events = await collectEvents(handle.events$);
    expect(events.map((e) => e.type)).toEqual(['run_started', 'run_cancelled']);
    await expect(handle.result).rejects.toBeInstanceOf(RunCancelledError);
    await expect(handle.result).rejects.toMatchObject({ reason: 'before start', phase: 'turn_entry' });
    expect(model.requests).toHaveLength(0);
    expect(toolRuns).toBe(0);
  });
});

/**
 * A non-streaming run is cancelled while its tool runs (the tool throws on
 * abort, or ignores it and returns later): cancelled, never completed, no
 * second model step, the call paired with an interrupted result.
 */
describe('a cancel during a tool in a non-streaming run', () => {
  for (const variant of [
    'A: throws an abort error when its signal fires',
    'B: ignores its signal and returns ok after a gate',
  ] as const) {
    it(`ends cancelled, never completed, no step 2, the call recorded as interrupted (${variant})`, async () => {
      const model = scriptedModel([{ toolCalls: [{ name: 't', callId: 'c1' }] }, 'done'], { stream: false });
      const g = gate<string>();
      const started = gate();
      const t = tool({
        name: 't',
        description: '',
        parameters: z.object({}),
        execute: (_a, ctx) => {
          started.open();
          if (variant.startsWith('A'))
            return new Promise<string>((_res, rej) =>
              ctx.signal.addEventListener('abort', () => rej(new Error('AbortError')), { once: true }),
            );
          return g.promise;
        },
      });
      const agent = defineAgent({ name: 'a', instructions: '', model, tools: [t] });
      const cancel = new CancelSignal();
      const done = collectEvents(run(agent, 'go', { cancel }));
      await started.promise;
      cancel.cancel('stop');
      g.open('ok');
      const events = await done;
      const terminals = terminalOf(events);
      expect(terminals.map((e) => e.type)).toEqual(['run_cancelled']);
      expect(model.requests).toHaveLength(1);
      expect(model.requests[0]!.stream).toBe(false);
      const last = terminals[0]!;
      if (last.type !== 'run_cancelled') throw new Error('unreachable');
      expect(last.partial.at(-1)).toEqual(
        expect.objectContaining({ type: 'tool_result', callId: 'c1', interrupted: true }),
      );
      expect(events.some((e) => e.type === 'tool_call_failed' || e.type === 'tool_call_completed')).toBe(false);
    });
  }
});

/**
 * A tool that loops and checks `ctx.signal` sees it aborted before `cancel()`
 * returns (guarantee 10: in-flight requests aborted) and stops.
 */
describe('the run abort signal reaches function tools', () => {
  it('the tool gets a non-null signal, aborted by the cancel; it stops within one iteration', async () => {
    const vt = virtualTime(); // the tool's 50 ms steps and the run share one virtual clock
    const model = scriptedModel([{ toolCalls: [{ name: 'long' }] }, 'never']);
    let toolSignal: AbortSignal | undefined;
    let iterations = 0;
    const reachedTwo = gate();
    const long = tool({
      name: 'long',
      description: '',
      parameters: z.object({}),
      execute: async (_a, ctx) => {
        toolSignal = ctx.signal;
        for (let i = 0; i < 20; i++) {
          if (ctx.signal.aborted) throw ctx.signal.reason;
          iterations++;
          if (iterations === 2) reachedTwo.open();
          await new Promise((r) => vt.scheduler.schedule(r, 50));
        }
        return 'finished';
      },
    });
    const agent = defineAgent({ name: 'a', instructions: '', model, tools: [long] });
    const cancel = new CancelSignal();
    const done = collectEvents(run(agent, 'go', { cancel, scheduler: vt.scheduler }));
    await vt.advance(50);
    expect(reachedTwo.isOpen).toBe(true);
    await reachedTwo.promise;
    cancel.cancel('stop');
    expect(toolSignal).toBeInstanceOf(AbortSignal);
    expect(toolSignal?.aborted).toBe(true); // aborted before cancel() returned
    expect(toolSignal?.reason).toBe('stop');
    const events = await done;
    await vt.runOut(); // all the tool's remaining steps' time passes
    expect(iterations).toBeLessThanOrEqual(3);
    expect(iterations).toBe(2); // its next check, after the step it was in, saw the abort
    expect(events.at(-1)).toMatchObject({ type: 'run_cancelled', phase: 'tool_call' });
    expect(model.requests).toHaveLength(1);
  });
});

/**
 * Model and tools answer synchronously; the caller cancels inside the handler
 * of event k, for every k: no model request or side effect after it (guarantee
 * 2: nothing starts after a cancel).
 */
describe('a cancel raised synchronously from a handler with synchronous model and tools', () => {
  it('for every event index k, no step starts after a cancel raised in the handler of event k', async () => {
    const build = () => {
      let sideEffects = 0;
      const model = scriptedModel([
        { toolCalls: [{ name: 'noop' }] },
        { toolCalls: [{ name: 'noop' }] },
        { toolCalls: [{ name: 'write' }] },
        'done',
      ]);
      const noop = tool({ name: 'noop', description: '', parameters: z.object({}), execute: () => 'ok' });
      const write = tool({ name: 'write', description: '', parameters: z.object({}), execute: () => ++sideEffects });
      return {
        model,
        agent: defineAgent({ name: 'a', instructions: '', model, tools: [noop, write] }),
        effects: () => sideEffects,
      };
    };
    const full = build();
    const all = await collectEvents(run(full.agent, 'go'));
    expect(all.at(-1)?.type).toBe('run_completed');
    for (let k = 0; k < all.length - 1; k++) {
      const b = build();
      const cancel = new CancelSignal();
      const events: RunEvent[] = [];
      let requestsAtCancel = -1;
      let effectsAtCancel = -1;
      const vt = virtualTime();
      const finished = new Promise<void>((resolve) =>
        run(b.agent, 'go', { cancel, scheduler: vt.scheduler }).subscribe({
          next: (e) => {
            events.push(e);
            if (events.length - 1 === k) {
              requestsAtCancel = b.model.requests.length;
              effectsAtCancel = b.effects();
              cancel.cancel('sync');
            }
          },
          complete: resolve,
        }),
      );
      await vt.idle();
      await finished;
      await vt.runOut(); // nothing more at any later (virtual) time
      expect(terminalOf(events).map((e) => e.type)).toEqual(['run_cancelled']);
      expect(events.at(-1)?.type).toBe('run_cancelled');
      expect(b.model.requests.length).toBe(requestsAtCancel);
      expect(b.effects()).toBe(effectsAtCancel);
      expect(events.filter((e) => e.type === 'tool_call_started').length).toBe(
        all.slice(0, k + 1).filter((e) => e.type === 'tool_call_started').length,
      );
    }
  });
});

/**
 * A normal streamed completion leaves the caller's AbortSignal and
 * CancelSignal unfired (guarantee 8: the caller's token is never fired).
 */
describe('a normal streaming completion leaves the caller token untouched', () => {
  it('the AbortSignal and CancelSignal stay unfired, the terminal is completed, no cancel hook fires', async () => {
    const model = scriptedModel([{ text: ['Hel', 'lo'] }]);
    const agent = defineAgent({ name: 'a', instructions: '', model });
    const controller = new AbortController();
    const cancel = new CancelSignal();
    const outcomes: string[] = [];
    const events = await collectEvents(
      run(agent, 'hi', {
        signal: controller.signal,
        cancel,
        hooks: { runEnded: ({ outcome }) => void outcomes.push(outcome.type) },
      }),
    );
    expect(events.at(-1)).toMatchObject({ type: 'run_completed', output: 'Hello' });
    expect(controller.signal.aborted).toBe(false);
    expect(cancel.isCancelled).toBe(false);
    expect(cancel.signal.aborted).toBe(false);
    expect(outcomes).toEqual(['run_completed']);
    expect(model.calls[0]).toMatchObject({ tornDown: false, finished: true });
  });
});

describe('isCancellation', () => {
  it('recognises a cancelled run by class, not by name', async () => {
    const cancel = new CancelSignal();
    cancel.cancel();
    const handle = start(defineAgent({ name: 'a', instructions: '', model: scriptedModel([]) }), 'x', { cancel });
    const err = await handle.result.catch((e: unknown) => e);
    expect(isCancellation(err)).toBe(true);
    expect(isCancellation({ name: 'RunCancelledError' })).toBe(false);
    expect(isCancellation(of(1))).toBe(false);
  });
});
