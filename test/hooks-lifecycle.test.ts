import { map, throwError, timer, type Observable } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  CancelSignal,
  defineAgent,
  run,
  tool,
  type HookReturn,
  type Hooks,
  type RunEvent,
  type TerminalEvent,
  type Tool,
} from '../src/index.js';
import { collectEvents, gate, scriptedModel } from '../src/testing/index.js';
import { virtualTime } from './support/virtual-time.js';

/**
 * Hooks (the `Hooks` doc comments): sync, Promise and Observable variants;
 * deny; a failing hook fails the run; runEnded exactly once.
 */
type Variant = 'sync' | 'promise' | 'observable';
const variants: Variant[] = ['sync', 'promise', 'observable'];

function as<T>(variant: Variant, value: T): HookReturn<T> {
  if (variant === 'sync') return value;
  if (variant === 'promise') return Promise.resolve(value);
  return timer(1).pipe(map(() => value)) as Observable<T>;
}

function failing(variant: Variant, message: string): HookReturn<never> {
  if (variant === 'sync') throw new Error(message);
  if (variant === 'promise') return Promise.reject(new Error(message));
  return throwError(() => new Error(message));
}

function echoTool(log: string[]): Tool {
  return tool({
    name: 'echo',
    description: 'echo',
    parameters: z.object({ text: z.string() }),
    execute: ({ text }) => (log.push(`exec:${text}`), text),
  });
}

function agentWith(log: string[], hooks?: Hooks) {
  const model = scriptedModel([{ toolCalls: [{ name: 'echo', arguments: { text: 'hi' }, callId: 'c1' }] }, 'done']);
  return { model, agent: defineAgent({ name: 'h', instructions: '', model, tools: [echoTool(log)], hooks }) };
}

const last = (events: RunEvent[]) => events.at(-1) as TerminalEvent;

describe.each(variants)('hooks, %s variant', (variant) => {
  it('every hook is called in order with its context; agent hooks before run hooks', async () => {
    const log: string[] = [];
    const set = (who: string): Hooks => ({
      turnStarted: (ctx) => as(variant, void log.push(`${who}:turnStarted:${ctx.turn}`)),
      beforeModelCall: (ctx) =>
        as(variant, void log.push(`${who}:beforeModelCall:${ctx.turn}:${ctx.request.items.length}`)),
      beforeToolCall: (ctx) => as(variant, void log.push(`${who}:beforeToolCall:${ctx.call.callId}`)),
      afterToolCall: (ctx) => as(variant, void log.push(`${who}:afterToolCall:${ctx.result.output}`)),
      runEnded: (ctx) => void log.push(`${who}:runEnded:${ctx.outcome.type}`),
    });
    const { agent } = agentWith(log, set('agent'));
    const events = await collectEvents(run(agent, 'go', { hooks: set('run') }));
    expect(last(events).type).toBe('run_completed');
    expect(log).toEqual([
      'agent:turnStarted:1',
      'run:turnStarted:1',
      'agent:beforeModelCall:1:1',
      'run:beforeModelCall:1:1',
      'agent:beforeToolCall:c1',
      'run:beforeToolCall:c1',
      'exec:hi',
      'agent:afterToolCall:hi',
      'run:afterToolCall:hi',
      'agent:turnStarted:2',
      'run:turnStarted:2',
      'agent:beforeModelCall:2:3',
      'run:beforeModelCall:2:3',
      'agent:runEnded:run_completed',
      'run:runEnded:run_completed',
    ]);
  });

  it('beforeToolCall { deny }: the tool never runs, the model gets a tool error, the run completes', async () => {
    const log: string[] = [];
    const { model, agent } = agentWith(log, { beforeToolCall: () => as(variant, { deny: 'no echo today' }) });
    const events = await collectEvents(run(agent, 'go'));
    expect(log).toEqual([]);
    expect(events.find((e) => e.type === 'tool_call_failed')).toMatchObject({
      callId: 'c1',
      error: { name: 'ToolCallDenied' },
    });
    expect(events.some((e) => e.type === 'tool_call_started')).toBe(false);
    expect(model.requests[1]!.items.at(-1)).toEqual({
      type: 'tool_result',
      callId: 'c1',
      output: 'Error: the call was denied: no echo today',
      isError: true,
    });
    expect(last(events)).toMatchObject({ type: 'run_completed', output: 'done' });
  });

  for (const hook of ['turnStarted', 'beforeModelCall', 'beforeToolCall', 'afterToolCall'] as const) {
    it(`a failing ${hook} fails the run (internal_error), runEnded once, nothing after`, async () => {
      const log: string[] = [];
      const ended: string[] = [];
      const { model, agent } = agentWith(log, {
        [hook]: () => failing(variant, `${hook} broke`),
        runEnded: (ctx: { outcome: TerminalEvent }) => void ended.push(ctx.outcome.type),
      } as Hooks);
      const events = await collectEvents(run(agent, 'go'));
      expect(last(events)).toMatchObject({
        type: 'run_failed',
        stopReason: 'internal_error',
        error: { name: 'HookError', message: `hook ${hook} failed: ${hook} broke` },
      });
      expect(events.filter((e) => e.type.startsWith('run_') && e.type !== 'run_started')).toHaveLength(1);
      expect(ended).toEqual(['run_failed']);
      expect(model.requests).toHaveLength(hook === 'turnStarted' || hook === 'beforeModelCall' ? 0 : 1);
      expect(log).toEqual(hook === 'afterToolCall' ? ['exec:hi'] : []);
    });
  }
});

describe('runEnded: exactly once per run, on every outcome, before the terminal event', () => {
  function tracked(model: ReturnType<typeof scriptedModel>, tools: Tool[] = []) {
    const log: string[] = [];
    const hooks: Hooks = { runEnded: (ctx) => void log.push(`runEnded:${ctx.outcome.type}`) };
    return { log, agent: defineAgent({ name: 'r', instructions: '', model, tools, hooks }) };
  }
  const blocked = (g: { promise: Promise<string> }, started: () => void) =>
    tool({ name: 'slow', description: '', parameters: z.object({}), execute: () => (started(), g.promise) });

  it('completed', async () => {
    const { log, agent } = tracked(scriptedModel(['done']));
    await new Promise<void>((resolve) =>
      run(agent, 'go').subscribe({ next: (e) => log.push(e.type), complete: resolve }),
    );
    expect(log.slice(-2)).toEqual(['runEnded:run_completed', 'run_completed']);
    expect(log.filter((l) => l.startsWith('runEnded'))).toHaveLength(1);
  });

  it('cancelled (cancel called twice, and once more after the end)', async () => {
    const g = gate<string>();
    const started = gate();
    const cancel = new CancelSignal();
    const { log, agent } = tracked(scriptedModel([{ toolCalls: [{ name: 'slow' }] }, 'never']), [
      blocked(g, () => started.open()),
    ]);
    const vt = virtualTime();
    const done = new Promise<void>((resolve) =>
      run(agent, 'go', { cancel, scheduler: vt.scheduler }).subscribe({
        next: (e) => log.push(e.type),
        complete: resolve,
      }),
    );
    await vt.idle();
    await started.promise;
    cancel.cancel('one');
    cancel.cancel('two');
    await done;
    cancel.cancel('after');
    g.open('late');
    await vt.runOut(); // nothing more at any later (virtual) time
    expect(log.slice(-2)).toEqual(['runEnded:run_cancelled', 'run_cancelled']);
    expect(log.filter((l) => l.startsWith('runEnded'))).toHaveLength(1);
  });

  it('failed (the model fails without a retry)', async () => {
    const { log, agent } = tracked(scriptedModel([]));
    await new Promise<void>((resolve) =>
      run(agent, 'go', { retry: false }).subscribe({ next: (e) => log.push(e.type), complete: resolve }),
    );
    expect(log.slice(-2)).toEqual(['runEnded:run_failed', 'run_failed']);
    expect(log.filter((l) => l.startsWith('runEnded'))).toHaveLength(1);
  });

  it('unsubscribed: runEnded once with run_cancelled, synchronously in the unsubscribe, no terminal delivered', async () => {
    const g = gate<string>();
    const started = gate();
    const { log, agent } = tracked(scriptedModel([{ toolCalls: [{ name: 'slow' }] }, 'never']), [
      blocked(g, () => started.open()),
    ]);
    const vt = virtualTime();
    const sub = run(agent, 'go', { scheduler: vt.scheduler }).subscribe((e) => log.push(e.type));
    await vt.idle();
    await started.promise;
    sub.unsubscribe();
    expect(log.at(-1)).toBe('runEnded:run_cancelled');
    sub.unsubscribe();
    g.open('late');
    await vt.runOut();
    expect(log.filter((l) => l.startsWith('runEnded'))).toEqual(['runEnded:run_cancelled']);
    expect(log.some((l) => l === 'run_cancelled')).toBe(false);
  });
});

describe('beforeToolCall: all hooks of a batch run before any of its tools starts', () => {
  for (const mode of ['sequential', 'parallel'] as const) {
    it(`${mode}, with Promise hooks`, async () => {
      const log: string[] = [];
      const model = scriptedModel([
        { toolCalls: ['a', 'b', 'c'].map((text) => ({ name: 'echo', arguments: { text }, callId: text })) },
        'done',
      ]);
      const agent = defineAgent({
        name: 'b',
        instructions: '',
        model,
        tools: [echoTool(log)],
        ...(mode === 'parallel' ? { parallelToolCalls: { maxConcurrency: 3 } } : {}),
        hooks: { beforeToolCall: async ({ call }) => void log.push(`hook:${call.callId}`) },
      });
      const events = await collectEvents(run(agent, 'go'));
      expect(log).toEqual(['hook:a', 'hook:b', 'hook:c', 'exec:a', 'exec:b', 'exec:c']);
      expect(last(events).type).toBe('run_completed');
    });
  }
});
