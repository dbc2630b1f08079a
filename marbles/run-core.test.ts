import { Observable } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { CancelSignal, defineAgent, run, tool, type RunEvent } from '../src/index.js';
import { recordTimeline, scriptedModel } from '../src/testing/index.js';

const newScheduler = () => new TestScheduler((a, b) => expect(a).toEqual(b));

/** An agent whose tools return the given cold Observables. */
function agentWith(
  ts: TestScheduler,
  steps: Parameters<typeof scriptedModel>[0],
  tools: Record<string, Observable<string>>,
) {
  const model = scriptedModel(steps);
  const defs = Object.entries(tools).map(([name, obs]) =>
    tool({ name, description: name, parameters: z.object({}), execute: () => obs }),
  );
  return { model, agent: defineAgent({ name: 'a', instructions: '', model, tools: defs }) };
}

describe('checkpoint 1: turn entry', () => {
  it('a token fired before subscribe ends the run at once: provider untouched, token re-armed', () => {
    const ts = newScheduler();
    ts.run(() => {
      const { model, agent } = agentWith(ts, ['never sent'], {});
      const cancel = new CancelSignal();
      cancel.cancel('early');
      const events: RunEvent[] = [];
      run(agent, 'go', { cancel }).subscribe((e) => events.push(e));
      expect(events.map((e) => e.type)).toEqual(['run_started', 'run_cancelled']);
      expect(events[1]).toMatchObject({
        type: 'run_cancelled',
        phase: 'turn_entry',
        reason: 'early',
        partial: [{ type: 'user', text: 'go' }],
      });
      expect(model.requests).toHaveLength(0);
      expect(cancel.isCancelled).toBe(false);
    });
  });

  for (const order of ['cancel scheduled first', 'completion scheduled first'] as const) {
    it(`tie at the next turn's entry (${order}): the second model request is never sent`, () => {
      const ts = newScheduler();
      ts.run(({ cold, expectSubscriptions }) => {
        const slow = cold('--(r|)', { r: 'ok' });
        const { model, agent } = agentWith(ts, [{ toolCalls: [{ name: 'slow' }], delayMs: 2 }, 'done'], { slow });
        const cancel = new CancelSignal();
        // The tool is subscribed at frame 2 and completes at frame 4.
        if (order === 'cancel scheduled first') ts.schedule(() => cancel.cancel('x'), 4);
        else ts.schedule(() => ts.schedule(() => cancel.cancel('x'), 1), 3);
        const timeline = recordTimeline(ts, run(agent, 'go', { cancel }));
        ts.flush();
        const head = [
          '0:run_started',
          '0:turn_started',
          '0:model_request_started',
          '2:model_response_completed',
          '2:tool_call_started:slow',
        ];
        if (order === 'cancel scheduled first') {
          expect(timeline).toEqual([...head, '4:run_cancelled:tool_call']);
          expectSubscriptions(slow.subscriptions).toBe('--^-!');
        } else {
          expect(timeline).toEqual([
            ...head,
            '4:tool_call_completed:slow',
            '4:turn_completed',
            '4:run_cancelled:turn_entry',
          ]);
          expectSubscriptions(slow.subscriptions).toBe('--^-!');
        }
        expect(model.requests).toHaveLength(1);
      });
    });
  }
});

describe('checkpoint 6: sequential tools, between calls', () => {
  const steps = [{ toolCalls: [{ name: 't1' }, { name: 't2' }], delayMs: 1 }, 'done'];

  for (const order of ['cancel scheduled first', 'completion scheduled first'] as const) {
    it(`tie with t1's completion (${order}): t2 never starts`, () => {
      const ts = newScheduler();
      ts.run(({ cold, expectSubscriptions }) => {
        const t1 = cold('--(a|)', { a: 'one' });
        const t2 = cold('-b|', { b: 'two' });
        const { model, agent } = agentWith(ts, steps, { t1, t2 });
        const cancel = new CancelSignal();
        // t1 runs from frame 1 to frame 3.
        if (order === 'cancel scheduled first') ts.schedule(() => cancel.cancel('x'), 3);
        else ts.schedule(() => ts.schedule(() => cancel.cancel('x'), 1), 2);
        const timeline = recordTimeline(ts, run(agent, 'go', { cancel }));
        ts.flush();
        const last =
          order === 'cancel scheduled first'
            ? ['3:run_cancelled:tool_call']
            : ['3:tool_call_completed:t1', '3:run_cancelled:between_tools'];
        expect(timeline).toEqual([
          '0:run_started',
          '0:turn_started',
          '0:model_request_started',
          '1:model_response_completed',
          '1:tool_call_started:t1',
          ...last,
        ]);
        expectSubscriptions(t1.subscriptions).toBe('-^-!');
        expectSubscriptions(t2.subscriptions).toBe([]);
        expect(model.requests).toHaveLength(1);
      });
    });
  }

  it('a cancel raised synchronously in the handler of tool_call_completed wins: t2 never starts', () => {
    const ts = newScheduler();
    ts.run(({ cold, expectSubscriptions }) => {
      const t1 = cold('--a|', { a: 'one' });
      const t2 = cold('-b|', { b: 'two' });
      const { agent } = agentWith(ts, steps, { t1, t2 });
      const cancel = new CancelSignal();
      const seen: string[] = [];
      run(agent, 'go', { cancel }).subscribe((e) => {
        seen.push(e.type === 'run_cancelled' ? `${e.type}:${e.phase}` : e.type);
        if (e.type === 'tool_call_completed') cancel.cancel('in handler');
      });
      ts.flush();
      expect(seen.slice(-2)).toEqual(['tool_call_completed', 'run_cancelled:between_tools']);
      expectSubscriptions(t2.subscriptions).toBe([]);
    });
  });
});

describe('checkpoint 8: a single tool call', () => {
  it('a cancel mid-tool tears the tool down, aborts its signal with the reason and ignores a late result', () => {
    const ts = newScheduler();
    ts.run(({ cold, expectSubscriptions }) => {
      const slow = cold('-----r|', { r: 'late' });
      let signal: AbortSignal | undefined;
      const model = scriptedModel([{ toolCalls: [{ name: 'slow', callId: 'c1' }], delayMs: 1 }, 'done']);
      const slowTool = tool({
        name: 'slow',
        description: '',
        parameters: z.object({}),
        execute: (_args, ctx) => ((signal = ctx.signal), slow),
      });
      const agent = defineAgent({ name: 'a', instructions: '', model, tools: [slowTool] });
      const cancel = new CancelSignal();
      ts.schedule(() => cancel.cancel({ by: 'user' }), 3);
      const events: RunEvent[] = [];
      run(agent, 'go', { cancel }).subscribe((e) => events.push(e));
      ts.flush();
      expectSubscriptions(slow.subscriptions).toBe('-^-!');
      expect(signal?.aborted).toBe(true);
      expect(signal?.reason).toEqual({ by: 'user' });
      const terminal = events.at(-1);
      expect(terminal).toMatchObject({ type: 'run_cancelled', phase: 'tool_call', reason: { by: 'user' } });
      if (terminal?.type !== 'run_cancelled') throw new Error('unreachable');
      expect(terminal.partial.map((i) => i.type)).toEqual(['user', 'assistant', 'tool_result']);
      expect(terminal.partial[2]).toMatchObject({ callId: 'c1', isError: true, interrupted: true });
      expect(events.filter((e) => e.type === 'tool_call_completed')).toEqual([]);
      expect(model.requests).toHaveLength(1);
    });
  });
});
