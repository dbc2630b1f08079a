import { NEVER } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { z } from 'zod';
import { beforeEach, describe, expect, it } from 'vitest';
import {
  CancelSignal,
  Mailbox,
  MemorySession,
  ModelCallError,
  defineAgent,
  run,
  tool,
  type MailboxToken,
  type RunEvent,
  type RunOptions,
  type TerminalEvent,
} from '../src/index.js';
import { scriptedModel, sequentialIds, type ScriptedStep } from '../src/testing/index.js';

/**
 * Guarantee 7: no steering lost or duplicated, and docs/steering.md:
 * `undelivered` on every terminal event (given-back first, then never drained,
 * in mailbox order), "give back to the front" of the caller's mailbox with the
 * same tokens, `ctx.mailbox`, and "one run per mailbox and session". Virtual
 * time (TestScheduler).
 */

let ts: TestScheduler;
beforeEach(() => {
  ts = new TestScheduler((actual, expected) => expect(actual).toEqual(expected));
});

const newMailbox = () => {
  let n = 0;
  return new Mailbox({ idGenerator: () => `m${++n}` });
};
const slowTool = tool({
  name: 't',
  description: 'd',
  parameters: z.object({}),
  execute: () => ts.createColdObservable('----a|'),
});

function start(steps: (ScriptedStep | string)[], options: RunOptions, maxTurns?: number) {
  const model = scriptedModel(steps);
  const agent = defineAgent({
    name: 'a',
    instructions: 'i',
    model,
    tools: [slowTool],
    ...(maxTurns ? { maxTurns } : {}),
  });
  const events: RunEvent[] = [];
  const sub = run(agent, 'go', { idGenerator: sequentialIds(), ...options }).subscribe((e) => events.push(e));
  const terminal = () => events.at(-1) as TerminalEvent;
  return { model, events, terminal, sub };
}
const undelivered = (e: TerminalEvent) => e.undelivered.map((u) => u.content);

describe('undelivered and give-back (guarantee 7)', () => {
  it('cancelled: drained items go back to the FRONT in order, same tokens, then the never-drained ones', () => {
    ts.run(() => {
      const mailbox = newMailbox();
      const cancel = new CancelSignal();
      const a = mailbox.push('A');
      const b = mailbox.push('B');
      let c: MailboxToken | undefined;
      const r = start([{ text: 'x', hold: NEVER }], { mailbox, cancel });
      ts.schedule(() => {
        expect(mailbox.remove(a)).toBe(false); // held by the run
        c = mailbox.push('C');
      }, 2);
      ts.schedule(() => cancel.cancel('stop'), 3);
      ts.flush();
      expect(r.terminal()).toMatchObject({
        type: 'run_cancelled',
        undelivered: [
          { id: 'm1', content: 'A' },
          { id: 'm2', content: 'B' },
          { id: 'm3', content: 'C' },
        ],
      });
      expect(mailbox.peek()).toEqual([a, b, c]);
      expect(mailbox.peek()[0]).toBe(a);
      expect(mailbox.peek()[1]).toBe(b);
      expect(mailbox.remove(a)).toBe(true);
      expect(mailbox.remove(b)).toBe(true);
    });
  });

  it('failed (model_error): drained items are given back and listed first', () => {
    ts.run(() => {
      const mailbox = newMailbox();
      const a = mailbox.push('A');
      const r = start([{ delayMs: 4, error: new ModelCallError('bad request', { status: 400 }) }], { mailbox });
      ts.schedule(() => mailbox.push('B'), 2);
      ts.flush();
      expect(r.terminal()).toMatchObject({ type: 'run_failed', stopReason: 'model_error' });
      expect(undelivered(r.terminal())).toEqual(['A', 'B']);
      expect(mailbox.peek()[0]).toBe(a);
    });
  });

  it('failed (max_turns): the drained item and the one pushed during the tools are both undelivered, in order', () => {
    ts.run(() => {
      const mailbox = newMailbox();
      mailbox.push('A');
      const r = start([{ toolCalls: [{ name: 't' }] }], { mailbox }, 1);
      ts.schedule(() => mailbox.push('B'), 2);
      ts.flush();
      expect(r.terminal()).toMatchObject({ type: 'run_failed', stopReason: 'max_turns' });
      expect(undelivered(r.terminal())).toEqual(['A', 'B']);
      expect(mailbox.peek().map((t) => t.content)).toEqual(['A', 'B']);
    });
  });

  it('unsubscribed: the same path gives the drained items back', () => {
    ts.run(() => {
      const mailbox = newMailbox();
      const a = mailbox.push('A');
      const r = start([{ text: 'x', hold: NEVER }], { mailbox });
      ts.schedule(() => r.sub.unsubscribe(), 3);
      ts.flush();
      expect(r.events.map((e) => e.type)).not.toContain('run_cancelled'); // nothing delivered after unsubscribe
      expect(mailbox.peek()).toEqual([a]);
      expect(mailbox.remove(a)).toBe(true);
    });
  });

  it('completed: drained items are delivered (remove false), undelivered is []', () => {
    ts.run(() => {
      const mailbox = newMailbox();
      const a = mailbox.push('A');
      const r = start(['ok'], { mailbox });
      ts.flush();
      expect(r.terminal()).toMatchObject({ type: 'run_completed', output: 'ok', undelivered: [] });
      expect(mailbox.remove(a)).toBe(false);
      expect(mailbox.size).toBe(0);
    });
  });
});

describe('ctx.mailbox in tools and hooks', () => {
  for (const own of [false, true]) {
    it(`is the run's mailbox in tools and hooks${own ? " (the run's own when none is given)" : ''}; a push from a tool lands next turn`, () => {
      ts.run(() => {
        const caller = own ? undefined : newMailbox();
        const seen: Mailbox[] = [];
        const pusher = tool({
          name: 'p',
          description: 'd',
          parameters: z.object({}),
          execute: (_a, ctx) => {
            seen.push(ctx.mailbox);
            ctx.mailbox.push('from tool');
            return 'pushed';
          },
        });
        const model = scriptedModel([{ toolCalls: [{ name: 'p' }] }, 'done']);
        const agent = defineAgent({ name: 'a', instructions: 'i', model, tools: [pusher] });
        const events: RunEvent[] = [];
        run(agent, 'go', {
          ...(caller ? { mailbox: caller } : {}),
          idGenerator: sequentialIds(),
          hooks: {
            beforeModelCall: (ctx) => void seen.push(ctx.mailbox),
            afterToolCall: (ctx) => void seen.push(ctx.mailbox),
          },
        }).subscribe((e) => events.push(e));
        ts.flush();
        expect(seen).toHaveLength(4);
        for (const m of seen) expect(m).toBe(seen[0]);
        if (caller) expect(seen[0]).toBe(caller);
        const injected = events.filter((e) => e.type === 'user_message_injected');
        expect(injected).toMatchObject([{ turn: 2, content: 'from tool' }]);
        expect(model.requests[1]!.items.at(-1)).toMatchObject({ type: 'user', text: 'from tool' });
        expect(events.at(-1)).toMatchObject({ type: 'run_completed', output: 'done', undelivered: [] });
      });
    });
  }
});

describe('one active run per mailbox and per session', () => {
  for (const shared of ['mailbox', 'session'] as const) {
    it(`a second concurrent run on the same ${shared} fails with ConcurrentRunError; the first is unaffected; a later run works`, () => {
      ts.run(() => {
        const mailbox = newMailbox();
        const session = new MemorySession();
        const opts: RunOptions = shared === 'mailbox' ? { mailbox } : { session };
        const first = start([{ text: 'first', delayMs: 5 }], opts);
        let second: ReturnType<typeof start> | undefined;
        let third: ReturnType<typeof start> | undefined;
        ts.schedule(() => (second = start(['never'], opts)), 2);
        ts.schedule(() => (third = start(['third'], opts)), 10);
        ts.flush();
        expect(second!.events.map((e) => e.type)).toEqual(['run_started', 'run_failed']);
        expect(second!.terminal()).toMatchObject({
          stopReason: 'configuration_error',
          error: { name: 'ConcurrentRunError' },
        });
        expect(second!.model.requests).toHaveLength(0);
        expect(first.terminal()).toMatchObject({ type: 'run_completed', output: 'first' });
        expect(third!.terminal()).toMatchObject({ type: 'run_completed', output: 'third' });
        if (shared === 'session') expect(session.writes).toBe(2);
      });
    });
  }

  // A run refused because the mailbox is busy never owned its queue.
  it("a run refused for a busy mailbox does not report the other run's queue as its undelivered", () => {
    ts.run(() => {
      const mailbox = newMailbox();
      const first = start([{ text: 'first', delayMs: 5 }, 'again'], { mailbox });
      let refused: ReturnType<typeof start> | undefined;
      ts.schedule(() => {
        mailbox.push('X');
        refused = start(['never'], { mailbox });
      }, 2);
      ts.flush();
      expect(refused!.terminal()).toMatchObject({ error: { name: 'ConcurrentRunError' }, undelivered: [] });
      expect(first.events.filter((e) => e.type === 'user_message_injected')).toMatchObject([{ content: 'X' }]);
    });
  });

  // Regression: the mailbox was once acquired before the session check and never released.
  it('a run refused for a busy session does not keep its (free) mailbox claimed', () => {
    ts.run(() => {
      const session = new MemorySession();
      const m2 = newMailbox();
      start([{ text: 'first', delayMs: 5 }], { session });
      let refused: ReturnType<typeof start> | undefined;
      let later: ReturnType<typeof start> | undefined;
      ts.schedule(() => (refused = start(['never'], { session, mailbox: m2 })), 2);
      ts.schedule(() => (later = start(['later'], { mailbox: m2 })), 10);
      ts.flush();
      expect(refused!.terminal()).toMatchObject({
        stopReason: 'configuration_error',
        error: { name: 'ConcurrentRunError' },
      });
      expect(later!.terminal()).toMatchObject({ type: 'run_completed', output: 'later' });
    });
  });
});
