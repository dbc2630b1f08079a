import { Observable } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { CancelSignal, defineAgent, run, tool, type Hooks, type Tool } from '../src/index.js';
import { gate, scriptedModel } from '../src/testing/index.js';
import { virtualTime } from './support/virtual-time.js';

/**
 * Guarantee 11: cleanup is started synchronously, inner to outer, each
 * exactly once, before the terminal event: the running tools' signal abort
 * listeners (and an Observable tool's teardown), then the runEnded hook,
 * then the terminal event.
 */
function setup(extraHooks: Hooks = {}) {
  const log: string[] = [];
  const running = gate();
  let n = 0;
  const promiseTool = (name: string): Tool =>
    tool({
      name,
      description: '',
      parameters: z.object({}),
      execute: (_a, ctx) => {
        ctx.signal.addEventListener('abort', () => log.push(`abort:${name}`));
        if (++n === 3) running.open();
        return new Promise<string>(() => {});
      },
    });
  const obsTool = tool({
    name: 'obs',
    description: '',
    parameters: z.object({}),
    execute: (_a, ctx) => {
      ctx.signal.addEventListener('abort', () => log.push('abort:obs'));
      return new Observable<string>(() => {
        if (++n === 3) running.open();
        return () => log.push('teardown:obs');
      });
    },
  });
  const quick = tool({ name: 'quick', description: '', parameters: z.object({}), execute: () => 'ok' });
  const model = scriptedModel([
    { toolCalls: ['quick', 'p1', 'obs', 'p2'].map((name) => ({ name, callId: name })) },
    'never',
  ]);
  const agent = defineAgent({
    name: 'order',
    instructions: '',
    model,
    tools: [quick, promiseTool('p1'), obsTool, promiseTool('p2')],
    parallelToolCalls: { maxConcurrency: 4 },
    hooks: { runEnded: ({ outcome }) => void log.push(`runEnded:${outcome.type}`), ...extraHooks },
  });
  return { log, running, agent };
}

/**
 * Each running tool's cleanup exactly once (a tool's own abort-vs-teardown order is not specified), then the rest in
 * order.
 */
function expectCleanupThen(log: string[], rest: string[]): void {
  const tools = log.slice(0, 4);
  expect([...tools].sort()).toEqual(['abort:obs', 'abort:p1', 'abort:p2', 'teardown:obs']);
  expect(tools.filter((l) => l.endsWith('p1') || l.endsWith('p2'))).toEqual(['abort:p1', 'abort:p2']); // call order
  expect(log.slice(4)).toEqual(rest);
}

describe('guarantee 11: cleanup order on cancel, unsubscribe and failure', () => {
  it('cancel: tools (each once), then runEnded, then run_cancelled, all before cancel() returns', async () => {
    const { log, running, agent } = setup();
    const cancel = new CancelSignal();
    const vt = virtualTime();
    run(agent, 'go', { cancel, scheduler: vt.scheduler }).subscribe((e) => {
      if (e.type.startsWith('run_') && e.type !== 'run_started') log.push(`event:${e.type}`);
    });
    await vt.idle();
    await running.promise;
    cancel.cancel('stop');
    const atReturn = [...log];
    cancel.cancel('again');
    await vt.runOut(); // nothing more at any later (virtual) time
    expectCleanupThen(atReturn, ['runEnded:run_cancelled', 'event:run_cancelled']);
    expect(log).toEqual(atReturn);
  });

  it('unsubscribe: the same cleanup, synchronously in unsubscribe(), no terminal event delivered', async () => {
    const { log, running, agent } = setup();
    const vt = virtualTime();
    const sub = run(agent, 'go', { scheduler: vt.scheduler }).subscribe((e) => {
      if (e.type.startsWith('run_') && e.type !== 'run_started') log.push(`event:${e.type}`);
    });
    await vt.idle();
    await running.promise;
    sub.unsubscribe();
    const atReturn = [...log];
    sub.unsubscribe();
    await vt.runOut();
    expectCleanupThen(atReturn, ['runEnded:run_cancelled']);
    expect(log).toEqual(atReturn);
  });

  it('failure (an afterToolCall hook throws once the others run): running siblings first, then runEnded, then run_failed', async () => {
    const release = gate();
    const { log, running, agent } = setup({
      afterToolCall: ({ call }) =>
        call.name === 'quick'
          ? release.promise.then(() => {
              throw new Error('boom');
            })
          : undefined,
    });
    const done = new Promise<void>((resolve) =>
      run(agent, 'go').subscribe({
        next: (e) => {
          if (e.type.startsWith('run_') && e.type !== 'run_started') log.push(`event:${e.type}`);
        },
        complete: resolve,
      }),
    );
    await running.promise;
    release.open();
    await done;
    expectCleanupThen(log, ['runEnded:run_failed', 'event:run_failed']);
  });
});
