import { Observable } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  CancelSignal,
  MemorySession,
  RunControl,
  ToolCallCancelledError,
  defineAgent,
  run,
  tool,
  type Item,
  type RunEvent,
  type Tool,
} from '../src/index.js';
import { scriptedModel, sequentialIds } from '../src/testing/index.js';
import { observe as observeRun } from './support/observe.js';

/**
 * Per-call cancel (docs/run-control.md, "Per-call cancel") in virtual time: one call of a parallel batch
 * is cancelled; its signal fires, its `tool_call_failed { interrupted: true }` is delivered before
 * `cancelToolCall()` returns (also for a tool that ignores its signal), the siblings and the run go on,
 * and the model reads "cancelled by the user: …". The model answers at frame 1 with calls to every tool.
 */
let ts: TestScheduler;
beforeEach(() => {
  ts = new TestScheduler((actual, expected) => expect(actual).toEqual(expected));
});

function setup(tools: Record<string, Observable<string>>, opts: { maxConcurrency?: number } = {}) {
  const signals: Record<string, AbortSignal> = {};
  const list: Tool[] = Object.entries(tools).map(([name, obs]) =>
    tool({
      name,
      description: name,
      parameters: z.object({}),
      execute: (_args, ctx) => {
        signals[name] = ctx.signal;
        return obs;
      },
    }),
  );
  const model = scriptedModel([
    { toolCalls: Object.keys(tools).map((name) => ({ name, callId: name })), delayMs: 1 },
    { text: 'done', delayMs: 1 },
  ]);
  const agent = defineAgent({
    name: 'calls',
    instructions: '',
    model,
    tools: list,
    parallelToolCalls: { maxConcurrency: opts.maxConcurrency ?? 3 },
  });
  return { model, agent, signals, control: new RunControl() };
}

const observe = (events$: Observable<RunEvent>, onEvent?: (e: RunEvent) => void) => observeRun(ts, events$, onEvent);
const result = (callId: string, output: string): Item => ({ type: 'tool_result', callId, output, isError: false });

describe('marbles: cancel one call of a parallel batch', () => {
  it('the cancelled call settles at once; its siblings run to their end and the run goes on', () => {
    ts.run(({ cold, expectSubscriptions }) => {
      const a = cold('---x|', { x: 'A' });
      const b = cold('------x|', { x: 'B' });
      const c = cold('--x|', { x: 'C' });
      const { model, agent, signals, control } = setup({ a, b, c });
      const session = new MemorySession();
      const answers: [boolean, string[]][] = [];
      let log: string[] = [];
      ts.schedule(() => {
        const before = log.length;
        const took = control.cancelToolCall('b', 'too slow');
        answers.push([took, log.slice(before)]); // what was delivered before cancelToolCall() returned
      }, 3);
      ts.schedule(() => answers.push([control.cancelToolCall('b'), []]), 4); // settled: false
      ts.schedule(() => answers.push([control.cancelToolCall('nope'), []]), 4); // unknown: false
      const observed = observe(run(agent, 'go', { control, session, idGenerator: sequentialIds() }));
      log = observed.log;
      ts.flush();
      expect(answers).toEqual([
        [true, ['3 tool_call_failed:b']],
        [false, []],
        [false, []],
      ]);
      expect(log).toEqual([
        '0 run_started',
        '0 turn_started',
        '0 model_request_started',
        '1 model_response_completed',
        '1 tool_call_started:a',
        '1 tool_call_started:b',
        '1 tool_call_started:c',
        '3 tool_call_failed:b',
        '4 tool_call_completed:c',
        '5 tool_call_completed:a',
        '5 turn_completed',
        '5 turn_started',
        '5 model_request_started',
        '6 text_delta',
        '6 model_response_completed',
        '6 turn_completed',
        '6 run_completed',
      ]);
      expectSubscriptions(a.subscriptions).toBe('-^---!');
      expectSubscriptions(b.subscriptions).toBe('-^-!');
      expectSubscriptions(c.subscriptions).toBe('-^--!');
      expect(signals.b!.aborted).toBe(true);
      expect(signals.b!.reason).toBeInstanceOf(ToolCallCancelledError);
      expect((signals.b!.reason as ToolCallCancelledError).reason).toBe('too slow');
      expect([signals.a!.aborted, signals.c!.aborted]).toEqual([false, false]);
      const failed = observed.events.find((e) => e.type === 'tool_call_failed');
      expect(failed).toMatchObject({
        callId: 'b',
        interrupted: true,
        error: { name: 'ToolCallCancelledError', message: 'cancelled by the user: too slow' },
      });
      // The model reads it in call order with the others.
      const sent = model.requests[1]!.items.filter((i) => i.type === 'tool_result');
      expect(sent).toEqual([
        result('a', 'A'),
        {
          type: 'tool_result',
          callId: 'b',
          output: 'Error: cancelled by the user: too slow',
          isError: true,
          interrupted: true,
        },
        result('c', 'C'),
      ]);
      expect(observed.events.at(-1)).toMatchObject({ type: 'run_completed', stopReason: 'completed', output: 'done' });
      expect(session.writes).toBe(1);
    });
  });

  it('a tool that ignores its signal: its result settles before cancelToolCall() returns; a late value is ignored', () => {
    ts.run(({ cold }) => {
      const fast = cold('-x|', { x: 'F' });
      let late = 0;
      const deaf = new Observable<string>((sub) => {
        ts.schedule(() => (late++, sub.next('late'), sub.complete()), 5); // no teardown: it ignores cancel
      });
      const { agent, control } = setup({ deaf, fast });
      let settledFirst: boolean | undefined;
      let observed!: ReturnType<typeof observe>;
      ts.schedule(() => {
        const took = control.cancelToolCall('deaf');
        settledFirst = took && observed.events.some((e) => e.type === 'tool_call_failed' && e.callId === 'deaf');
      }, 2);
      observed = observe(run(agent, 'go', { control }));
      ts.flush();
      expect(settledFirst).toBe(true);
      expect(late).toBe(1); // the tool went on; its value reached nobody
      expect(
        observed.events.filter((e) => e.type === 'tool_call_completed').map((e) => (e as { callId: string }).callId),
      ).toEqual(['fast']);
      expect(observed.events.at(-1)).toMatchObject({ type: 'run_completed', output: 'done' });
    });
  });

  it('a call still queued at the wave boundary is not running: false, and it runs later', () => {
    ts.run(({ cold }) => {
      const a = cold('---x|', { x: 'A' });
      const b = cold('x|', { x: 'B' });
      const { agent, control } = setup({ a, b }, { maxConcurrency: 1 });
      const answers: boolean[] = [];
      ts.schedule(() => answers.push(control.cancelToolCall('b')), 2);
      const { log } = observe(run(agent, 'go', { control }));
      ts.flush();
      expect(answers).toEqual([false]);
      expect(log).toContain('6 tool_call_completed:b');
    });
  });

  it('a cancel of the run in the same frame wins over cancelToolCall (either order): run_cancelled at tool_call', () => {
    for (const order of ['call first', 'run first'] as const) {
      const scheduler = new TestScheduler((x, y) => expect(x).toEqual(y));
      ts = scheduler;
      scheduler.run(({ cold }) => {
        const a = cold('-----x|', { x: 'A' });
        const b = cold('-----x|', { x: 'B' });
        const { agent, control } = setup({ a, b });
        const cancel = new CancelSignal();
        const answers: boolean[] = [];
        if (order === 'call first') {
          scheduler.schedule(() => answers.push(control.cancelToolCall('a', 'one')), 3);
          scheduler.schedule(() => cancel.cancel('all'), 3);
        } else {
          scheduler.schedule(() => cancel.cancel('all'), 3);
          scheduler.schedule(() => answers.push(control.cancelToolCall('a', 'one')), 3);
        }
        const { events } = observe(run(agent, 'go', { control, cancel }));
        scheduler.flush();
        expect(answers).toEqual([order === 'call first']);
        expect(events.at(-1)).toMatchObject({ type: 'run_cancelled', reason: 'all', phase: 'tool_call' });
        const partial = (events.at(-1) as { partial: readonly Item[] }).partial.filter((i) => i.type === 'tool_result');
        expect(partial.map((i) => (i as { interrupted?: boolean }).interrupted)).toEqual([true, true]);
      });
    }
  });
});

describe('marbles: cancel a call from the handler of its tool_call_started', () => {
  it('the tool never runs; its interrupted result is delivered; the batch goes on', () => {
    ts.run(({ cold, expectSubscriptions }) => {
      const a = cold('-x|', { x: 'A' });
      const b = cold('-x|', { x: 'B' });
      const { agent, control, signals } = setup({ a, b });
      const answers: boolean[] = [];
      const { log } = observe(run(agent, 'go', { control }), (e) => {
        if (e.type === 'tool_call_started' && e.callId === 'a') answers.push(control.cancelToolCall('a', 'no'));
      });
      ts.flush();
      expect(answers).toEqual([true]);
      expectSubscriptions(a.subscriptions).toBe([]);
      expect(signals.a).toBeUndefined(); // never executed
      expect(log.slice(4, 8)).toEqual([
        '1 tool_call_started:a',
        '1 tool_call_failed:a',
        '1 tool_call_started:b',
        '3 tool_call_completed:b',
      ]);
    });
  });
});

describe('marbles: cancel a call from the handler of the progress its tool reports while it starts', () => {
  /** Tools that report progress, then answer, all before `execute` (or the Observable's subscribe) returns. */
  const answers: Record<string, (report: (p: unknown) => void) => unknown> = {
    'a plain value': (report) => {
      report('half');
      return 'A';
    },
    'an Observable that emits and completes': (report) =>
      new Observable<string>((s) => {
        report('half');
        s.next('A');
        s.complete();
      }),
    'an Observable that errors': (report) =>
      new Observable<string>((s) => {
        report('half');
        s.error(new Error('broken'));
      }),
  };
  for (const [kind, answer] of Object.entries(answers)) {
    it(`${kind}: the call settles once, interrupted; its answer after the cancel is ignored`, () => {
      ts.run(() => {
        const a = tool({
          name: 'a',
          description: 'a',
          parameters: z.object({}),
          execute: (_args, ctx) => answer(ctx.reportProgress) as string,
        });
        const model = scriptedModel([
          { toolCalls: [{ name: 'a', callId: 'a' }], delayMs: 1 },
          { text: 'done', delayMs: 1 },
        ]);
        const agent = defineAgent({ name: 'calls', instructions: '', model, tools: [a] });
        const control = new RunControl();
        const took: boolean[] = [];
        const { log, events } = observe(run(agent, 'go', { control }), (e) => {
          if (e.type === 'tool_call_progress') took.push(control.cancelToolCall('a', 'enough'));
        });
        ts.flush();
        expect(took).toEqual([true]);
        expect(log.filter((line) => /tool_call|turn_completed/.test(line))).toEqual([
          '1 tool_call_started:a',
          '1 tool_call_progress:a',
          '1 tool_call_failed:a',
          '1 turn_completed',
          '2 turn_completed',
        ]);
        expect(events.find((e) => e.type === 'tool_call_failed')).toMatchObject({
          interrupted: true,
          outcome: 'cancelled',
        });
        const results = model.requests[1]!.items.filter((i) => i.type === 'tool_result');
        expect(results).toHaveLength(1);
        expect(results[0]).toMatchObject({ callId: 'a', isError: true });
        expect(events.at(-1)?.type).toBe('run_completed');
      });
    });
  }
});
