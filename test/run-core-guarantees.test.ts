import { Subject, VirtualTimeScheduler } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  CancelSignal,
  ConfigurationError,
  Mailbox,
  RunFailedError,
  defineAgent,
  run,
  start,
  tool,
  type RunEvent,
  type TerminalEvent,
} from '../src/index.js';
import { collectEvents, gate, scriptedModel } from '../src/testing/index.js';
import { virtualTime } from './support/virtual-time.js';

/** An agent with one tool `slow` that waits on a gate and ignores its signal. */
function slowAgent(steps: Parameters<typeof scriptedModel>[0] = [{ toolCalls: [{ name: 'slow' }] }, 'done']) {
  const g = gate<string>();
  const started = gate();
  const model = scriptedModel(steps);
  const slow = tool({
    name: 'slow',
    description: '',
    parameters: z.object({}),
    execute: () => (started.open(), g.promise),
  });
  return { g, started, model, agent: defineAgent({ name: 'a', instructions: '', model, tools: [slow] }) };
}

const last = (events: RunEvent[]) => events.at(-1) as TerminalEvent;

describe('cancel sources all end the run the same way', () => {
  it('cancel$ emission', async () => {
    const { agent, started } = slowAgent();
    const cancel$ = new Subject<string>();
    const done = collectEvents(run(agent, 'go', { cancel$ }));
    await started.promise;
    cancel$.next('from cancel$');
    expect(last(await done)).toMatchObject({ type: 'run_cancelled', reason: 'from cancel$', phase: 'tool_call' });
    expect(cancel$.observed).toBe(false);
  });

  it('AbortSignal: aborted mid-run, and one already aborted cancels every run it is given', async () => {
    const { agent, started } = slowAgent();
    const controller = new AbortController();
    const done = collectEvents(run(agent, 'go', { signal: controller.signal }));
    await started.promise;
    controller.abort('abort reason');
    expect(last(await done)).toMatchObject({ type: 'run_cancelled', reason: 'abort reason' });
    const again = await collectEvents(run(slowAgent().agent, 'go', { signal: controller.signal }));
    expect(again.map((e) => e.type)).toEqual(['run_started', 'run_cancelled']);
  });

  it('ctx.cancel from a tool cancels this run only, never the caller token', async () => {
    const model = scriptedModel([{ toolCalls: [{ name: 'quit' }] }, 'never']);
    const quit = tool({
      name: 'quit',
      description: '',
      parameters: z.object({}),
      execute: (_a, ctx) => (ctx.cancel.cancel('tool says stop'), 'bye'),
    });
    const caller = new CancelSignal();
    const events = await collectEvents(
      run(defineAgent({ name: 'a', instructions: '', model, tools: [quit] }), 'go', { cancel: caller }),
    );
    expect(last(events)).toMatchObject({ type: 'run_cancelled', reason: 'tool says stop' });
    expect(caller.isCancelled).toBe(false);
    expect(model.requests).toHaveLength(1);
  });

  it('run deadline in virtual time: a cancel with reason { type: deadline }', () => {
    const scheduler = new VirtualTimeScheduler();
    const model = scriptedModel([{ text: 'late', delayMs: 5_000 }], { scheduler });
    const events: RunEvent[] = [];
    run(defineAgent({ name: 'a', instructions: '', model }), 'go', {
      scheduler,
      deadlines: { runMs: 1_000 },
    }).subscribe((e) => events.push(e));
    scheduler.flush();
    expect(last(events)).toMatchObject({
      type: 'run_cancelled',
      reason: { type: 'deadline' },
      phase: 'model_request',
      at: 1_000,
    });
    expect(model.calls[0]?.tornDown).toBe(true);
    expect(scheduler.actions).toHaveLength(0);
  });

  it('unsubscribing runs the same cancel path synchronously and delivers nothing more', async () => {
    const { agent, started } = slowAgent();
    const mailbox = new Mailbox();
    const outcomes: TerminalEvent[] = [];
    const seen: string[] = [];
    const sub = run(agent, 'go', {
      mailbox,
      hooks: { runEnded: ({ outcome }) => void outcomes.push(outcome), beforeToolCall: () => undefined },
      context: undefined,
    }).subscribe((e) => seen.push(e.type));
    await started.promise;
    const token = mailbox.push('queued steering');
    sub.unsubscribe();
    expect(outcomes).toHaveLength(1);
    expect(outcomes[0]).toMatchObject({ type: 'run_cancelled', reason: { type: 'unsubscribed' }, phase: 'tool_call' });
    expect(outcomes[0]!.undelivered).toEqual([{ id: token.id, content: 'queued steering' }]);
    expect(seen.at(-1)).toBe('tool_call_started');
    expect(mailbox.remove(token)).toBe(true);
  });
});

describe('guarantee 3: latency', () => {
  it('run_cancelled is delivered before cancel() returns, even when the tool ignores its signal', async () => {
    const { agent, started, g } = slowAgent();
    const cancel = new CancelSignal();
    const events: RunEvent[] = [];
    const vt = virtualTime();
    run(agent, 'go', { cancel, scheduler: vt.scheduler }).subscribe((e) => events.push(e));
    await vt.idle();
    await started.promise;
    cancel.cancel('now');
    expect(events.at(-1)).toMatchObject({ type: 'run_cancelled', reason: 'now' });
    g.open('late result');
    await vt.runOut(); // the late result changes nothing, at any later (virtual) time
    expect(events.at(-1)?.type).toBe('run_cancelled');
  });
});

describe('guarantee 5: one cancel = exactly one cancelled run', () => {
  it('a cancel while no run is active cancels the next run at turn entry, then the token is fresh', async () => {
    const cancel = new CancelSignal();
    cancel.cancel('idle stop');
    const agent = defineAgent({ name: 'a', instructions: '', model: scriptedModel(['first answer']) });
    const first = await collectEvents(run(agent, 'go', { cancel }));
    expect(first.map((e) => e.type)).toEqual(['run_started', 'run_cancelled']);
    expect(first[1]).toMatchObject({ phase: 'turn_entry', reason: 'idle stop' });
    expect(cancel.isCancelled).toBe(false);
    const second = await collectEvents(run(agent, 'go', { cancel }));
    expect(second.at(-1)).toMatchObject({ type: 'run_completed', output: 'first answer' });
  });

  it('a handler of run_cancelled that starts the next run on the same CancelSignal gets a completed run', async () => {
    const { agent, started } = slowAgent();
    const cancel = new CancelSignal();
    const nextAgent = defineAgent({ name: 'b', instructions: '', model: scriptedModel(['next done']) });
    const nextRun = new Promise<RunEvent[]>((resolve) => {
      run(agent, 'go', { cancel }).subscribe((e) => {
        if (e.type === 'run_cancelled') {
          expect(cancel.isCancelled).toBe(false); // re-armed before the terminal event
          void collectEvents(run(nextAgent, 'again', { cancel })).then(resolve);
        }
      });
    });
    await started.promise;
    cancel.cancel('stop');
    expect(last(await nextRun)).toMatchObject({ type: 'run_completed', output: 'next done' });
  });

  it('a cancel raised after the outcome was decided stays raised and cancels the next run', async () => {
    const agent = defineAgent({ name: 'a', instructions: '', model: scriptedModel(['one', 'two']) });
    const cancel = new CancelSignal();
    const first = await new Promise<RunEvent[]>((resolve) => {
      const out: RunEvent[] = [];
      run(agent, 'go', { cancel }).subscribe({
        next: (e) => {
          out.push(e);
          if (e.type === 'run_completed') cancel.cancel('too late for this run');
        },
        complete: () => resolve(out),
      });
    });
    expect(last(first).type).toBe('run_completed');
    expect(cancel.isCancelled).toBe(true);
    const second = await collectEvents(run(agent, 'go', { cancel }));
    expect(second.map((e) => e.type)).toEqual(['run_started', 'run_cancelled']);
    expect(cancel.isCancelled).toBe(false);
  });
});

describe('guarantee 8 and start()', () => {
  it('handle.cancel fires a run-owned token, never the caller token; result rejects RunCancelledError', async () => {
    const { agent, started } = slowAgent();
    const caller = new CancelSignal();
    const handle = start(agent, 'go', { cancel: caller });
    await started.promise;
    handle.cancel('handle stop');
    await expect(handle.result).rejects.toMatchObject({
      name: 'RunCancelledError',
      reason: 'handle stop',
      phase: 'tool_call',
    });
    expect(caller.isCancelled).toBe(false);
    const late = await collectEvents(handle.events$);
    expect(late.at(-1)?.type).toBe('run_cancelled');
    expect(late[0]).toMatchObject({ type: 'run_started', seq: 0, runId: handle.runId });
  });

  it('result resolves with output, usage and the committed Items', async () => {
    const model = scriptedModel([
      {
        toolCalls: [{ name: 'add', arguments: { a: 2, b: 3 } }],
        usage: { inputTokens: 3, outputTokens: 2, totalTokens: 5 },
      },
      { text: '5', usage: { inputTokens: 7, outputTokens: 1, totalTokens: 8 } },
    ]);
    const add = tool({
      name: 'add',
      description: '',
      parameters: z.object({ a: z.number(), b: z.number() }),
      execute: ({ a, b }) => a + b,
    });
    const result = await start(defineAgent({ name: 'a', instructions: '', model, tools: [add] }), 'add').result;
    expect(result).toMatchObject({
      output: '5',
      finishReason: 'stop',
      usage: { inputTokens: 10, outputTokens: 3, totalTokens: 13 },
      undelivered: [],
    });
    expect(result.items.map((i) => i.type)).toEqual(['user', 'assistant', 'tool_result', 'assistant']);
    expect(result.items[2]).toMatchObject({ output: '5', isError: false });
  });
});

describe('maxTurns and configuration', () => {
  it('maxTurns reached ends run_failed with stopReason max_turns', async () => {
    const model = scriptedModel([{ toolCalls: [{ name: 'again' }] }, { toolCalls: [{ name: 'again' }] }, 'never']);
    const again = tool({ name: 'again', description: '', parameters: z.object({}), execute: () => 'more' });
    const handle = start(defineAgent({ name: 'a', instructions: '', model, tools: [again], maxTurns: 2 }), 'loop');
    const err = await handle.result.catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RunFailedError);
    expect(err).toMatchObject({ stopReason: 'max_turns', error: { name: 'MaxTurnsError', maxTurns: 2 } });
    expect(model.requests).toHaveLength(2);
  });

  it('invalid options throw ConfigurationError naming the field, before anything runs', () => {
    const model = scriptedModel(['x']);
    const agent = defineAgent({ name: 'a', instructions: '', model });
    const bad = (options: object, field: string) => {
      let caught: unknown;
      try {
        run(agent, 'go', options as never);
      } catch (e) {
        caught = e;
      }
      expect(caught).toBeInstanceOf(ConfigurationError);
      expect((caught as ConfigurationError).field).toBe(field);
    };
    bad({ cancel: 5 }, 'options.cancel');
    bad({ signal: 'no' }, 'options.signal');
    bad({ retry: { maxRetries: -1 } }, 'options.retry.maxRetries');
    bad({ deadlines: { idleMs: 0 } }, 'options.deadlines.idleMs');
    bad({ mailbox: {} }, 'options.mailbox');
    expect(() => run(agent, 42 as never)).toThrow(ConfigurationError);
    expect(() => defineAgent({ name: 'a', instructions: '', model, maxTurns: 0 })).toThrow(/agent\.maxTurns/);
    expect(() => defineAgent({ name: 'a', instructions: '', model: {} as never })).toThrow(/agent\.model/);
    expect(model.requests).toHaveLength(0);
  });
});

describe('guarantee 3 from the very first event', () => {
  for (const source of ['CancelSignal', 'cancel$', 'AbortSignal'] as const) {
    it(`a cancel (${source}) raised in the run_started handler is delivered before cancel() returns`, () => {
      const agent = defineAgent({ name: 'a', instructions: '', model: scriptedModel(['never']) });
      const cancel = new CancelSignal();
      const cancel$ = new Subject<string>();
      const controller = new AbortController();
      const seen: string[] = [];
      run(agent, 'go', { cancel, cancel$, signal: controller.signal }).subscribe((e) => {
        seen.push(e.type);
        if (e.type !== 'run_started') return;
        if (source === 'CancelSignal') cancel.cancel('stop');
        else if (source === 'cancel$') cancel$.next('stop');
        else controller.abort('stop');
        seen.push('cancel() returned');
      });
      expect(seen).toEqual(['run_started', 'run_cancelled', 'cancel() returned']);
      expect(cancel.isCancelled).toBe(false);
    });
  }
});
