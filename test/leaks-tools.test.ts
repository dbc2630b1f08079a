import { getEventListeners } from 'node:events';
import { NEVER, VirtualTimeScheduler } from 'rxjs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { CancelSignal, defineAgent, run, tool, type Hooks, type RunEvent, type Tool } from '../src/index.js';
import { collectEvents, gate, scriptedModel } from '../src/testing/index.js';
import { virtualTime } from './support/virtual-time.js';

/**
 * Guarantee 9 for tools: a long-lived CancelSignal and AbortSignal shared by
 * many runs keep their listener counts, the run leaves no timers or scheduler
 * actions, and abandoned tools cause no unhandled rejection and no late event.
 */
const unhandled: unknown[] = [];
const warnings: Error[] = [];
const onUnhandled = (reason: unknown): void => void unhandled.push(reason);
const onWarning = (w: Error): void => void warnings.push(w);
beforeEach(() => {
  unhandled.length = 0;
  warnings.length = 0;
  process.on('unhandledRejection', onUnhandled);
  process.on('warning', onWarning);
});
afterEach(() => {
  process.off('unhandledRejection', onUnhandled);
  process.off('warning', onWarning);
});

const count = (kind: string): number => process.getActiveResourcesInfo().filter((r) => r === kind).length;
const terminalOf = (events: RunEvent[]) => events.at(-1)!;

type Kind = 'completing' | 'cancelled' | 'failing';

describe('leaks: 50 runs share one CancelSignal and one AbortSignal, each with a parallel batch of 3 tools', () => {
  it('listener counts, timers and warnings are back to baseline after every run', async () => {
    const cancel = new CancelSignal();
    const controller = new AbortController();
    const signal = controller.signal;
    const snapshot = () => ({
      signalListeners: getEventListeners(signal, 'abort').length,
      cancelSignalListeners: getEventListeners(cancel.signal, 'abort').length,
      timeouts: count('Timeout'),
    });
    const baseline = snapshot();
    const outcomes: string[] = [];
    let listenersWhileRunning = -1;

    for (let i = 0; i < 50; i++) {
      const kind: Kind = (['completing', 'cancelled', 'failing'] as const)[i % 3]!;
      const started = gate();
      let running = 0;
      const mk = (name: string, behaviour: 'quick' | 'rejects on abort' | 'ignores signal'): Tool =>
        tool({
          name,
          description: '',
          parameters: z.object({}),
          execute: (_a, ctx) => {
            listenersWhileRunning = getEventListeners(signal, 'abort').length;
            if (++running === 3) started.open();
            if (behaviour === 'quick' || kind === 'completing') return Promise.resolve(`${name} done`);
            if (behaviour === 'ignores signal') return new Promise<string>(() => {});
            return new Promise<string>((_r, reject) =>
              ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason), { once: true }),
            );
          },
        });
      const model = scriptedModel([{ toolCalls: [{ name: 'a' }, { name: 'b' }, { name: 'c' }] }, 'done']);
      const hooks: Hooks =
        kind === 'failing'
          ? {
              afterToolCall: ({ call }) => {
                if (call.name === 'a') throw new Error('after a');
              },
            }
          : {};
      const agent = defineAgent({
        name: `run${i}`,
        instructions: '',
        model,
        parallelToolCalls: { maxConcurrency: 3 },
        tools: [mk('a', 'quick'), mk('b', 'rejects on abort'), mk('c', 'ignores signal')],
      });
      const done = collectEvents(run(agent, 'go', { cancel, signal, hooks, deadlines: { toolMs: 60_000 } }));
      if (kind === 'cancelled') {
        await started.promise;
        cancel.cancel(`stop ${i}`);
      }
      const events = await done;
      outcomes.push(terminalOf(events).type);
      expect(snapshot(), `after run ${i} (${kind})`).toEqual(baseline);
      expect(cancel.isCancelled).toBe(false); // re-armed by the run that saw it fire
    }

    expect(listenersWhileRunning).toBe(baseline.signalListeners + 1); // the measure sees the run's own listener
    expect(outcomes.filter((o) => o === 'run_completed')).toHaveLength(17);
    expect(outcomes.filter((o) => o === 'run_cancelled')).toHaveLength(17);
    expect(outcomes.filter((o) => o === 'run_failed')).toHaveLength(16);
    // Node emits a warning on process.nextTick (process.emitWarning): one turn of the event loop lets it out.
    await new Promise((r) => setImmediate(r));
    expect(warnings.filter((w) => w.name === 'MaxListenersExceededWarning')).toEqual([]);
    expect(unhandled).toEqual([]);
  });

  it('no scheduler action of the run is left when the terminal event is delivered (virtual time)', () => {
    const scheduler = new VirtualTimeScheduler();
    const cancel = new CancelSignal();
    const never = (name: string) => tool({ name, description: '', parameters: z.object({}), execute: () => NEVER });
    const model = scriptedModel([{ toolCalls: ['a', 'b', 'c'].map((name) => ({ name })) }]);
    const agent = defineAgent({
      name: 'v',
      instructions: '',
      model,
      tools: [never('a'), never('b'), never('c')],
      parallelToolCalls: { maxConcurrency: 2 },
    });
    let pendingAtTerminal = -1;
    run(agent, 'go', { cancel, scheduler, deadlines: { toolMs: 1_000 } }).subscribe((e) => {
      if (e.type === 'run_cancelled') pendingAtTerminal = scheduler.actions.length;
    });
    scheduler.schedule(() => cancel.cancel('stop'), 10);
    scheduler.flush();
    expect(pendingAtTerminal).toBe(0);
    expect(scheduler.now()).toBe(10); // no tool timeout ever fired
  });
});

describe('leaks: abandoned tools', () => {
  it('a signal-ignoring tool that rejects 100 ms after the cancel: no unhandled rejection, no event after the terminal', async () => {
    const vt = virtualTime();
    const started = gate();
    let rejectLate!: () => void;
    const deaf = tool({
      name: 'deaf',
      description: '',
      parameters: z.object({}),
      execute: () =>
        new Promise<string>((_r, reject) => {
          rejectLate = () => void vt.scheduler.schedule(() => reject(new Error('late failure')), 100);
          started.open();
        }),
    });
    const model = scriptedModel([{ toolCalls: [{ name: 'deaf' }] }, 'never']);
    const cancel = new CancelSignal();
    const events: RunEvent[] = [];
    let completed = 0;
    const agent = defineAgent({ name: 'd', instructions: '', model, tools: [deaf] });
    run(agent, 'go', { cancel, scheduler: vt.scheduler }).subscribe({
      next: (e) => events.push(e),
      complete: () => void completed++,
    });
    await vt.idle();
    await started.promise;
    cancel.cancel('stop');
    rejectLate();
    const atCancel = events.length;
    expect(terminalOf(events)).toMatchObject({ type: 'run_cancelled', phase: 'tool_call' });
    await vt.runOut(); // the late rejection (virtual +100 ms) and anything it could cause
    expect(vt.now()).toBe(100);
    expect(events).toHaveLength(atCancel);
    expect(completed).toBe(1);
    expect(unhandled).toEqual([]);
    expect(model.requests).toHaveLength(1);
  });

  it('a pending Promise hook that rejects after the cancel: no unhandled rejection, no event after the terminal', async () => {
    let rejectHook!: (e: Error) => void;
    const hookCalled = gate();
    const model = scriptedModel([{ toolCalls: [{ name: 't' }] }, 'never']);
    const t = tool({ name: 't', description: '', parameters: z.object({}), execute: () => 'x' });
    const hooks: Hooks = {
      beforeToolCall: () => new Promise<void>((_r, reject) => ((rejectHook = reject), hookCalled.open())),
    };
    const cancel = new CancelSignal();
    const events: RunEvent[] = [];
    const vt = virtualTime();
    const agent = defineAgent({ name: 'h', instructions: '', model, tools: [t], hooks });
    run(agent, 'go', { cancel, scheduler: vt.scheduler }).subscribe((e) => events.push(e));
    await vt.idle();
    await hookCalled.promise;
    cancel.cancel('stop');
    expect(terminalOf(events)).toMatchObject({ type: 'run_cancelled', phase: 'hook' });
    const atCancel = events.length;
    rejectHook(new Error('late hook failure'));
    await vt.runOut();
    expect(events).toHaveLength(atCancel);
    expect(unhandled).toEqual([]);
  });
});
