import { Subject } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { z } from 'zod';
import { beforeEach, describe, expect, it } from 'vitest';
import {
  CancelSignal,
  Mailbox,
  MemorySession,
  commitPartial,
  defineAgent,
  run,
  tool,
  type Item,
  type MailboxToken,
  type RunEvent,
  type RunOptions,
  type TerminalEvent,
  type Tool,
} from '../src/index.js';
import { unpairedToolCalls } from '../src/items.js';
import { gate, scriptedModel, sequentialIds, type ScriptedStep } from '../src/testing/index.js';
import { virtualTime } from './support/virtual-time.js';

/** Guarantee 7: no steering lost or duplicated, in virtual time. */

let ts: TestScheduler;
beforeEach(() => {
  ts = new TestScheduler((actual, expected) => expect(actual).toEqual(expected));
});

const newMailbox = () => {
  let n = 0;
  return new Mailbox({ idGenerator: () => `m${++n}` });
};
const count = (items: readonly Item[], text: string) =>
  items.filter((i) => i.type === 'user' && i.text === text).length;

function runOnce(
  steps: (ScriptedStep | string)[],
  options: RunOptions,
  tools: Tool[] = [],
  onEvent?: (e: RunEvent) => void,
) {
  const model = scriptedModel(steps);
  const events: RunEvent[] = [];
  run(defineAgent({ name: 'a', instructions: 'i', model, tools }), 'task', {
    idGenerator: sequentialIds(),
    ...options,
  }).subscribe((e) => {
    events.push(e);
    onEvent?.(e);
  });
  return { model, events, terminal: () => events.at(-1) as TerminalEvent & { partial: readonly Item[] } };
}

/**
 * The model calls t1..t3; "use plan B" is pushed while t1 runs. A push never
 * interrupts: t2 and t3 still run. Whether the run is cancelled before the
 * steer is drained or right after it is injected, it goes back to the mailbox
 * front ("give back to the front") and the next run delivers it once.
 */
describe('a drained steer is never lost by a cancel', () => {
  const variants = [
    'cancel at turn_completed (never drained)',
    'cancel at injection (drained, given back)',
    'given back, then commitPartial',
  ] as const;
  for (const variant of variants) {
    it(variant, () => {
      ts.run(() => {
        const mailbox = newMailbox();
        const session = new MemorySession();
        const cancel = new CancelSignal();
        const started: string[] = [];
        const mk = (name: string, marble: string) =>
          tool({
            name,
            description: 'd',
            parameters: z.object({}),
            execute: () => {
              started.push(name);
              return ts.createColdObservable(marble);
            },
          });
        const tools = [mk('t1', '----a|'), mk('t2', '-a|'), mk('t3', '-a|')];
        let steer: MailboxToken | undefined;
        const first = runOnce(
          [{ toolCalls: [{ name: 't1' }, { name: 't2' }, { name: 't3' }] }, 'never'],
          { mailbox, session, cancel },
          tools,
          (e) => {
            if (
              variant.startsWith('cancel at turn_completed')
                ? e.type === 'turn_completed'
                : e.type === 'user_message_injected'
            )
              cancel.cancel('stop');
          },
        );
        ts.schedule(() => (steer = mailbox.push('use plan B')), 2); // while t1 runs
        ts.flush();
        // The push never interrupted the tool phase: t2 and t3 ran; the model was never asked again.
        expect(started).toEqual(['t1', 't2', 't3']);
        expect(first.model.requests).toHaveLength(1);
        expect(first.terminal()).toMatchObject({
          type: 'run_cancelled',
          undelivered: [{ id: 'm1', content: 'use plan B' }],
        });
        expect(unpairedToolCalls(first.terminal().partial)).toEqual([]);
        expect(mailbox.peek()).toEqual([steer]); // still pending, same token
        expect(session.writes).toBe(0);
        if (variant === 'given back, then commitPartial') {
          void commitPartial(session, first.terminal().partial, mailbox); // a sync append withdraws at once
          expect(session.items.filter((i) => i.type === 'user' && i.id === 'm1')).toHaveLength(1);
          expect(mailbox.size).toBe(0);
        }
        const second = runOnce(['done'], { mailbox, session });
        ts.flush();
        expect(second.terminal()).toMatchObject({ type: 'run_completed', undelivered: [] });
        expect(count(second.model.requests[0]!.items, 'use plan B')).toBe(1);
        expect(count(session.items, 'use plan B')).toBe(1);
        expect(mailbox.remove(steer!)).toBe(false); // delivered: "pending" cleared only now
      });
    });
  }
});

/**
 * While a gated tool runs, B is pushed and withdrawn (`remove` says true) and
 * C is pushed; after C is taken, removing it says false. B reaches neither the
 * model nor the history; C is delivered once.
 */
describe('a withdrawn steer is never delivered', () => {
  it('remove() acknowledged while queued: B is in neither the model input nor the history; A completes; a held one reports false', () => {
    ts.run(() => {
      const mailbox = newMailbox();
      const session = new MemorySession();
      const acks: boolean[] = [];
      let held: MailboxToken | undefined;
      const gated = tool({
        name: 'g',
        description: 'd',
        parameters: z.object({}),
        execute: () => ts.createColdObservable('-----a|'),
      });
      const a = runOnce([{ toolCalls: [{ name: 'g' }] }, 'A done'], { mailbox, session }, [gated], (e) => {
        if (e.type === 'user_message_injected') acks.push(mailbox.remove(held!)); // already taken: not withdrawable
      });
      ts.schedule(() => {
        const b = mailbox.push('B');
        acks.push(mailbox.remove(b));
        held = mailbox.push('C');
      }, 2);
      ts.flush();
      expect(acks).toEqual([true, false]);
      expect(a.terminal()).toMatchObject({ type: 'run_completed', output: 'A done', undelivered: [] });
      expect(count(a.model.requests[1]!.items, 'B')).toBe(0);
      expect(count(a.model.requests[1]!.items, 'C')).toBe(1);
      expect(count(session.items, 'B')).toBe(0);
      expect(a.events.filter((e) => e.type === 'user_message_injected')).toMatchObject([{ content: 'C' }]);
      expect(mailbox.remove(held!)).toBe(false); // delivered
    });
  });
});

/**
 * While a tool runs, a steer$ message and a mailbox message are queued, then
 * the run is cancelled: no model request, tool run or event follows the
 * terminal, and both messages stay queued and are reported as undelivered.
 */
describe('no work resumes after cancel through queued steering', () => {
  it('after run_cancelled: no request, tool run or event at any later time; queued messages stay queued', async () => {
    // The tool is a Promise, so the run gets a VirtualTimeScheduler and the test lets its Promise callbacks run.
    const vt = virtualTime();
    const mailbox = new Mailbox();
    const cancel = new CancelSignal();
    const steer$ = new Subject<string>();
    const toolGate = gate<string>();
    let executions = 0;
    const work = tool({
      name: 'work',
      description: 'd',
      parameters: z.object({}),
      execute: () => {
        executions++;
        queueMicrotask(() => {
          // while the tool runs: queue a steer and a follow-up, then cancel
          steer$.next('steering message');
          mailbox.push('follow-up message');
          cancel.cancel('stop');
        });
        return toolGate.promise;
      },
    });
    const model = scriptedModel([{ toolCalls: [{ name: 'work' }] }, { toolCalls: [{ name: 'work' }] }, 'x']);
    const events: RunEvent[] = [];
    const agent = defineAgent({ name: 'a', instructions: 'i', model, tools: [work] });
    const settled = new Promise<void>((resolve) =>
      run(agent, 'task', { mailbox, cancel, steer$, scheduler: vt.scheduler }).subscribe({
        next: (e) => events.push(e),
        complete: resolve,
      }),
    );
    await vt.idle();
    await settled;
    expect(events.at(-1)).toMatchObject({ type: 'run_cancelled', phase: 'tool_call' });
    const after = { requests: model.requests.length, executions, events: events.length };
    expect(after).toEqual({ requests: 1, executions: 1, events: events.length });
    toolGate.open('late'); // the abandoned tool finishing changes nothing
    steer$.next('after the run'); // the run is over: steer$ is no longer merged
    await vt.runOut(); // all virtual time passes, not just 300 ms
    expect({ requests: model.requests.length, executions, events: events.length }).toEqual(after);
    expect(mailbox.peek().map((t) => t.content)).toEqual(['steering message', 'follow-up message']);
    expect((events.at(-1) as TerminalEvent).undelivered.map((u) => u.content)).toEqual([
      'steering message',
      'follow-up message',
    ]);
  });
});

/**
 * Steer S arrives during a gated text answer; the run either takes one more
 * turn or is cancelled and the next run takes S. S appears once in the live
 * events and once in the history, with the same id.
 */
describe('a steer is never duplicated', () => {
  for (const outcome of ['latch released: one more turn', 'cancelled: next run']) {
    it(`${outcome}: S once in the live events, once in the history, same id`, () => {
      ts.run(({ cold }) => {
        const mailbox = newMailbox();
        const session = new MemorySession();
        const cancel = new CancelSignal();
        const live: RunEvent[] = [];
        const latch = cold('------a');
        const first = runOnce(
          [{ text: 'answer', gate: latch }, 'answer with S'],
          { mailbox, session, cancel },
          [],
          (e) => live.push(e),
        );
        ts.schedule(() => mailbox.push('S'), 2);
        if (outcome.startsWith('cancelled')) ts.schedule(() => cancel.cancel('stop'), 4);
        ts.flush();
        if (outcome.startsWith('cancelled')) {
          expect(first.terminal()).toMatchObject({ type: 'run_cancelled', undelivered: [{ id: 'm1', content: 'S' }] });
          runOnce(['answer with S'], { mailbox, session }, [], (e) => live.push(e));
          ts.flush();
        }
        const injected = live.filter((e) => e.type === 'user_message_injected');
        expect(injected).toMatchObject([{ id: 'm1', content: 'S' }]);
        const persisted = session.items.filter((i) => i.type === 'user' && i.text === 'S');
        expect(persisted).toEqual([{ type: 'user', id: 'm1', text: 'S' }]);
        expect(live.at(-1)).toMatchObject({ type: 'run_completed', output: 'answer with S', undelivered: [] });
        expect(mailbox.size).toBe(0);
      });
    });
  }
});

/**
 * A steer pushed during a tool-free streamed answer makes the model run again
 * with it ("the final-answer check"); at maxTurns it is reported in
 * `undelivered` instead and stays in the mailbox.
 */
describe('a steer during a tool-free answer is never stranded', () => {
  it('M is called again with the steer; the mailbox is empty after the run', () => {
    ts.run(() => {
      const mailbox = newMailbox();
      const r = runOnce([{ text: ['Slow', 'ly', ' streaming'], deltaDelayMs: 3 }, 'X mentioned'], { mailbox });
      ts.schedule(() => mailbox.push('also mention X'), 4);
      ts.flush();
      expect(r.model.requests).toHaveLength(2);
      expect(r.model.requests[1]!.items.at(-1)).toEqual({ type: 'user', id: 'm1', text: 'also mention X' });
      expect(r.terminal()).toMatchObject({ type: 'run_completed', output: 'X mentioned', undelivered: [] });
      expect(mailbox.size).toBe(0);
    });
  });

  it('at maxTurns: reported explicitly in undelivered (the leftover is exactly what is reported)', () => {
    ts.run(() => {
      const mailbox = newMailbox();
      const model = scriptedModel([{ text: ['Slow', 'ly'], deltaDelayMs: 3 }]);
      const events: RunEvent[] = [];
      run(defineAgent({ name: 'a', instructions: 'i', model, maxTurns: 1 }), 'task', { mailbox }).subscribe((e) =>
        events.push(e),
      );
      ts.schedule(() => mailbox.push('also mention X'), 1);
      ts.flush();
      const terminal = events.at(-1) as TerminalEvent;
      expect(terminal).toMatchObject({ type: 'run_completed', undelivered: [{ id: 'm1', content: 'also mention X' }] });
      expect(mailbox.peek().map((t) => ({ id: t.id, content: t.content }))).toEqual(terminal.undelivered);
      expect(model.requests).toHaveLength(1);
    });
  });
});
