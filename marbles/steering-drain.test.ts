import type { Observable } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { z } from 'zod';
import { beforeEach, describe, expect, it } from 'vitest';
import { defineAgent, run, tool, Mailbox, type Item, type RunEvent, type RunOptions } from '../src/index.js';
import { scriptedModel, sequentialIds, type ScriptedStep } from '../src/testing/index.js';

/**
 * Steering in the loop (docs/steering.md), the real engine in virtual time:
 * drain per turn right after `turn_started` (after the `turnStarted` hook),
 * pushes mid-model and mid-tool land at the next turn start without
 * interrupting, and a push during the final answer gets one more turn
 * (within maxTurns; at maxTurns it is reported `undelivered` and stays queued).
 */

let ts: TestScheduler;
beforeEach(() => {
  ts = new TestScheduler((actual, expected) => expect(actual).toEqual(expected));
});

/** `frame:type[:detail]` for each event (virtual ms from the scheduler). */
function label(e: RunEvent): string {
  switch (e.type) {
    case 'user_message_injected':
      return `${e.at}:injected:${e.id}=${e.content}`;
    case 'tool_call_started':
    case 'tool_call_completed':
      return `${e.at}:${e.type}:${e.callId}`;
    case 'run_completed':
      return `${e.at}:run_completed:${e.output}`;
    case 'run_failed':
      return `${e.at}:run_failed:${e.stopReason}`;
    case 'run_cancelled':
      return `${e.at}:run_cancelled:${e.phase}`;
    default:
      return `${e.at}:${e.type}`;
  }
}

interface Setup {
  steps: (ScriptedStep | string)[];
  maxTurns?: number;
  options?: RunOptions;
  /** Frames the tool `t` takes (a cold Observable per call). */
  toolMarble?: string;
  onEvent?: (e: RunEvent, mailbox: Mailbox) => void;
}

function setup({ steps, maxTurns, options, toolMarble = '--a|', onEvent }: Setup) {
  const mailbox = new Mailbox({
    idGenerator: (() => {
      let n = 0;
      return () => `m${++n}`;
    })(),
  });
  const model = scriptedModel(steps);
  const toolRuns: Observable<string>[] = [];
  const t = tool({
    name: 't',
    description: 'a tool',
    parameters: z.object({}),
    execute: () => {
      const obs = ts.createColdObservable(toolMarble);
      toolRuns.push(obs);
      return obs;
    },
  });
  const agent = defineAgent({ name: 'a', instructions: 'i', model, tools: [t], ...(maxTurns ? { maxTurns } : {}) });
  const log: string[] = [];
  const events: RunEvent[] = [];
  const go = () =>
    run(agent, 'go', { mailbox, idGenerator: sequentialIds(), ...options }).subscribe((e) => {
      events.push(e);
      log.push(label(e));
      onEvent?.(e, mailbox);
    });
  return { mailbox, model, toolRuns, log, events, go };
}

const users = (items: readonly Item[]) =>
  items.filter((i) => i.type === 'user').map((i) => (i as { text: string }).text);

describe('steering: drain per turn ("drain after turnStarted", "arrival order")', () => {
  it('items queued before the run: injected after turn_started, in order, with token ids, ahead of the input', () => {
    ts.run(() => {
      const s = setup({ steps: [{ text: 'ok', delayMs: 3 }] });
      s.mailbox.push('first');
      s.mailbox.push('second');
      s.go();
      ts.flush();
      expect(s.log).toEqual([
        '0:run_started',
        '0:turn_started',
        '0:injected:m1=first',
        '0:injected:m2=second',
        '0:model_request_started',
        '3:text_delta',
        '3:model_response_completed',
        '3:turn_completed',
        '3:run_completed:ok',
      ]);
      // "Arrival order": queued before the run started, so ahead of the input's last user Item.
      expect(s.model.requests[0]!.items).toEqual([
        { type: 'user', id: 'm1', text: 'first' },
        { type: 'user', id: 'm2', text: 'second' },
        { type: 'user', id: 'item-1', text: 'go' },
      ]);
      expect(s.mailbox.size).toBe(0);
    });
  });

  it('a push from the turnStarted hook lands in the same turn; ctx.mailbox is the run mailbox', () => {
    ts.run(() => {
      const seen: Mailbox[] = [];
      const s = setup({
        steps: [{ text: 'ok', delayMs: 2 }],
        options: {
          hooks: {
            turnStarted: (ctx) => {
              seen.push(ctx.mailbox);
              ctx.mailbox.push('from hook');
            },
          },
        },
      });
      s.go();
      ts.flush();
      expect(seen).toEqual([s.mailbox]);
      expect(seen[0]).toBe(s.mailbox);
      expect(s.log.slice(0, 4)).toEqual([
        '0:run_started',
        '0:turn_started',
        '0:injected:m1=from hook',
        '0:model_request_started',
      ]);
      expect(users(s.model.requests[0]!.items)).toEqual(['go', 'from hook']);
      expect(s.log.at(-1)).toBe('2:run_completed:ok');
    });
  });

  it('pushes mid-model and mid-tool never interrupt: every tool of the turn runs, both land at the next turn start', () => {
    ts.run(({ expectSubscriptions }) => {
      const s = setup({
        steps: [
          { toolCalls: [{ name: 't' }, { name: 't' }], delayMs: 5 },
          { text: 'done', delayMs: 2 },
        ],
      });
      ts.schedule(() => s.mailbox.push('mid-model'), 2);
      ts.schedule(() => s.mailbox.push('mid-tool'), 6);
      s.go();
      ts.flush();
      expect(s.log).toEqual([
        '0:run_started',
        '0:turn_started',
        '0:model_request_started',
        '5:model_response_completed',
        '5:tool_call_started:call_1_1',
        '8:tool_call_completed:call_1_1',
        '8:tool_call_started:call_1_2',
        '11:tool_call_completed:call_1_2',
        '11:turn_completed',
        '11:turn_started',
        '11:injected:m1=mid-model',
        '11:injected:m2=mid-tool',
        '11:model_request_started',
        '13:text_delta',
        '13:model_response_completed',
        '13:turn_completed',
        '13:run_completed:done',
      ]);
      // Both tools ran to completion (subscribed by the engine, never cut short).
      expect(s.toolRuns).toHaveLength(2);
      expectSubscriptions((s.toolRuns[0] as any).subscriptions).toBe('-----^--!');
      expectSubscriptions((s.toolRuns[1] as any).subscriptions).toBe('--------^--!');
      // Turn 2's input: the tool results first, then the steering, in push order.
      expect(s.model.requests[1]!.items.map((i) => (i.type === 'user' ? `user:${i.id}` : i.type))).toEqual([
        'user:item-1',
        'assistant',
        'tool_result',
        'tool_result',
        'user:m1',
        'user:m2',
      ]);
      expect(s.events.at(-1)).toMatchObject({ type: 'run_completed', undelivered: [] });
    });
  });

  for (const when of ['mid-answer', 'same frame as the answer', 'in the turn_completed handler'] as const) {
    it(`a push during the final answer (${when}) gets one more turn`, () => {
      ts.run(() => {
        const s = setup({
          steps: [
            { text: 'first', delayMs: 5 },
            { text: 'second', delayMs: 2 },
          ],
          onEvent: (e, mailbox) => {
            if (when === 'in the turn_completed handler' && e.type === 'turn_completed' && e.turn === 1)
              mailbox.push('late');
          },
        });
        if (when === 'mid-answer') ts.schedule(() => s.mailbox.push('late'), 3);
        if (when === 'same frame as the answer') ts.schedule(() => s.mailbox.push('late'), 5);
        s.go();
        ts.flush();
        expect(s.log).toEqual([
          '0:run_started',
          '0:turn_started',
          '0:model_request_started',
          '5:text_delta',
          '5:model_response_completed',
          '5:turn_completed',
          '5:turn_started',
          '5:injected:m1=late',
          '5:model_request_started',
          '7:text_delta',
          '7:model_response_completed',
          '7:turn_completed',
          '7:run_completed:second',
        ]);
        expect(users(s.model.requests[1]!.items)).toEqual(['go', 'late']);
        expect(s.mailbox.size).toBe(0);
      });
    });
  }

  it('at maxTurns the final-answer push is listed in undelivered and stays queued', () => {
    ts.run(() => {
      const s = setup({ steps: [{ text: 'only', delayMs: 5 }], maxTurns: 1 });
      let token: ReturnType<Mailbox['push']> | undefined;
      ts.schedule(() => (token = s.mailbox.push('too late')), 3);
      s.go();
      ts.flush();
      expect(s.log.at(-1)).toBe('5:run_completed:only');
      expect(s.events.at(-1)).toMatchObject({ undelivered: [{ id: 'm1', content: 'too late' }] });
      expect(s.model.requests).toHaveLength(1);
      expect(s.mailbox.peek()).toEqual([token]);
      expect(s.mailbox.remove(token!)).toBe(true);
    });
  });

  it('steer$ is merged only while the run lives (subscribed at start, unsubscribed before the terminal event)', () => {
    ts.run(({ cold, expectSubscriptions }) => {
      const steer$ = cold<string>('--a-------------b', { a: 'steer A', b: 'after end' });
      const s = setup({
        steps: [
          { toolCalls: [{ name: 't' }], delayMs: 4 },
          { text: 'done', delayMs: 2 },
        ],
        options: { steer$ },
      });
      s.go();
      ts.flush();
      expect(s.log.filter((l) => l.includes('injected'))).toEqual(['7:injected:m1=steer A']);
      expect(s.log.at(-1)).toBe('9:run_completed:done');
      expectSubscriptions(steer$.subscriptions).toBe('^--------!');
      expect(s.mailbox.size).toBe(0); // 'after end' was never pushed
    });
  });
});
