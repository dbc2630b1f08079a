import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  CancelSignal,
  defineAgent,
  run,
  tool,
  type ModelProvider,
  type ModelRequest,
  type RunEvent,
} from '../src/index.js';
import { collectEvents, gate, scriptedModel, type ScriptedStep } from '../src/testing/index.js';
import { trackUnhandledRejections } from './support/unhandled.js';
import { virtualTime } from './support/virtual-time.js';

/**
 * Agent as tool, cancellation (guarantee 11: cleanup starts inner to outer;
 * guarantee 12: sub-runs on a child token): the
 * parent's cancel stops the whole tree, inner to outer, once each, before the
 * parent's terminal event; a child's own cancel stays inside the child.
 */
const unhandled = trackUnhandledRejections();

/**
 * A model whose answer depends on the request (for concurrent sub-runs): `answer(userText, nth request of that run)`.
 */
function modelBy(answer: (input: string, n: number) => ScriptedStep | string): ModelProvider {
  return {
    id: 'by-input',
    call: (request: ModelRequest) => {
      const first = request.items.find((i) => i.type === 'user');
      const input = first?.type === 'user' ? first.text : '';
      const n = request.items.filter((i) => i.type === 'assistant').length;
      return scriptedModel([answer(input, n)]).call(request);
    },
  };
}

describe('sub-agents: the parent cancel stops the tree', () => {
  it('both cancelled, the child tool signal fired with the reason, cleanup inner to outer once each; 5 repetitions, no unhandled rejection', async () => {
    for (let i = 0; i < 5; i++) {
      const log: string[] = [];
      const entered = gate();
      const childSignals: AbortSignal[] = [];
      const work = tool({
        name: 'work',
        description: '',
        parameters: z.object({}),
        execute: (_a, ctx) => {
          childSignals.push(ctx.signal);
          entered.open();
          return new Promise<string>((_r, reject) =>
            ctx.signal.addEventListener('abort', () => {
              log.push('child tool aborted');
              reject(new Error('aborted'));
            }),
          );
        },
      });
      const child = defineAgent({
        name: 'child',
        instructions: '',
        tools: [work],
        model: scriptedModel([{ toolCalls: [{ name: 'work' }] }, 'never']),
        hooks: {
          runEnded: ({ outcome }) =>
            void log.push(`child ${outcome.type}: ${String((outcome as { reason?: unknown }).reason)}`),
        },
      });
      const parentModel = scriptedModel([
        { toolCalls: [{ name: 'delegate', arguments: { input: 'do it' } }] },
        'never',
      ]);
      const parent = defineAgent({
        name: 'parent',
        instructions: '',
        model: parentModel,
        tools: [child.asTool({ name: 'delegate', description: 'Delegates' })],
        hooks: { runEnded: ({ outcome }) => void log.push(`parent ${outcome.type}`) },
      });
      const T = new CancelSignal();
      let closed = false;
      const events: RunEvent[] = [];
      const vt = virtualTime(); // the sub-run inherits the scheduler
      run(parent, 'go', { cancel: T, scheduler: vt.scheduler }).subscribe({
        next: (e) => {
          events.push(e);
          if (e.type === 'run_cancelled') log.push('parent terminal event');
        },
        complete: () => (closed = true),
      });
      await vt.idle();
      await entered.promise;
      T.cancel(`stop ${i}`);
      expect(closed).toBe(true);
      expect(log).toEqual([
        'child tool aborted',
        `child run_cancelled: stop ${i}`,
        'parent run_cancelled',
        'parent terminal event',
      ]);
      expect(childSignals).toHaveLength(1);
      expect(childSignals[0]!.aborted).toBe(true);
      expect(childSignals[0]!.reason).toBe(`stop ${i}`);
      // The cancelled child's usage (one model call) is summed into the parent's terminal event.
      expect(events.at(-1)).toMatchObject({
        type: 'run_cancelled',
        reason: `stop ${i}`,
        phase: 'tool_call',
        usage: { inputTokens: 20, outputTokens: 10, totalTokens: 30 },
      });
      expect(parentModel.requests).toHaveLength(1);
      expect(T.isCancelled).toBe(false); // re-armed by the parent run
      await vt.runOut(); // the rejected child tool and anything after it, at any later (virtual) time
    }
    expect(unhandled).toEqual([]);
  });

  it('unsubscribing from the parent tears the child down the same way', async () => {
    const entered = gate();
    let signal: AbortSignal | undefined;
    const work = tool({
      name: 'work',
      description: '',
      parameters: z.object({}),
      execute: (_a, ctx) => ((signal = ctx.signal), entered.open(), new Promise(() => {})),
    });
    const ended: string[] = [];
    const child = defineAgent({
      name: 'child',
      instructions: '',
      tools: [work],
      model: scriptedModel([{ toolCalls: [{ name: 'work' }] }]),
      hooks: { runEnded: ({ outcome }) => void ended.push(outcome.type) },
    });
    const parent = defineAgent({
      name: 'parent',
      instructions: '',
      model: scriptedModel([{ toolCalls: [{ name: 'delegate', arguments: { input: 'x' } }] }]),
      tools: [child.asTool({ name: 'delegate', description: '' })],
    });
    const sub = run(parent, 'go').subscribe();
    await entered.promise;
    sub.unsubscribe();
    expect(signal!.aborted).toBe(true);
    expect(ended).toEqual(['run_cancelled']);
  });
});

describe('sub-agents: a child cancel stays inside the child', () => {
  it('a child that cancels itself gives the parent a tool error; the parent completes and its token is untouched', async () => {
    const giveUp = tool({
      name: 'give_up',
      description: '',
      parameters: z.object({}),
      execute: (_a, ctx) => (ctx.cancel.cancel('child gave up'), 'ignored'),
    });
    const child = defineAgent({
      name: 'child',
      instructions: '',
      tools: [giveUp],
      model: scriptedModel([{ toolCalls: [{ name: 'give_up' }] }, 'never']),
    });
    let parentToken: CancelSignal | undefined;
    const parentModel = scriptedModel([
      { toolCalls: [{ name: 'delegate', arguments: { input: 'try' } }] },
      'parent done',
    ]);
    const parent = defineAgent({
      name: 'parent',
      instructions: '',
      model: parentModel,
      tools: [child.asTool({ name: 'delegate', description: '' })],
      hooks: { turnStarted: ({ cancel }) => void (parentToken = cancel) },
    });
    const T = new CancelSignal();
    const events = await collectEvents(run(parent, 'go', { cancel: T }));
    expect(events.at(-1)).toMatchObject({ type: 'run_completed', output: 'parent done' });
    expect(events.find((e) => e.type === 'tool_call_failed')).toMatchObject({
      name: 'delegate',
      error: { name: 'ToolExecutionError', message: 'sub-run cancelled: run cancelled at tool_call: child gave up' },
    });
    expect(parentModel.requests[1]!.items.at(-1)).toEqual({
      type: 'tool_result',
      callId: 'call_1_1',
      isError: true,
      output: 'Error: sub-run cancelled: run cancelled at tool_call: child gave up',
    });
    expect(parentToken!.isCancelled).toBe(false);
    expect(T.isCancelled).toBe(false);
    expect(unhandled).toEqual([]);
  });

  it('three parallel child calls, one of which cancels itself, all settle and the parent completes', async () => {
    const released = gate();
    const wait = tool({
      name: 'wait',
      description: '',
      parameters: z.object({}),
      execute: () => released.promise.then(() => 'waited'),
    });
    const giveUp = tool({
      name: 'give_up',
      description: '',
      parameters: z.object({}),
      execute: (_a, ctx) => (ctx.cancel.cancel('c gave up'), released.open(), 'ignored'),
    });
    const childModel = modelBy((input, n) =>
      n === 0 ? { toolCalls: [{ name: input === 'c' ? 'give_up' : 'wait' }] } : `done ${input}`,
    );
    const child = defineAgent({ name: 'child', instructions: '', tools: [wait, giveUp], model: childModel });
    const parentModel = scriptedModel([
      { toolCalls: ['a', 'b', 'c'].map((input) => ({ name: 'delegate', arguments: { input } })) },
      'all settled',
    ]);
    const parent = defineAgent({
      name: 'parent',
      instructions: '',
      model: parentModel,
      parallelToolCalls: { maxConcurrency: 3 },
      tools: [child.asTool({ name: 'delegate', description: '' })],
    });
    const events = await collectEvents(run(parent, 'go'));
    expect(events.at(-1)).toMatchObject({ type: 'run_completed', output: 'all settled' });
    const results = parentModel.requests[1]!.items.filter((i) => i.type === 'tool_result');
    expect(results.map((r) => r.type === 'tool_result' && [r.isError, r.output])).toEqual([
      [false, 'done a'],
      [false, 'done b'],
      [true, 'Error: sub-run cancelled: run cancelled at tool_call: c gave up'],
    ]);
    // The three sub-runs overlapped: a and b were waiting when c cancelled itself.
    const starts = events.filter((e) => e.type === 'subrun_event' && e.event.type === 'tool_call_started').length;
    expect(starts).toBe(3);
    expect(unhandled).toEqual([]);
  });
});
