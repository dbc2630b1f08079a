import { config } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import {
  CancelSignal,
  Mailbox,
  MemorySession,
  ModelCallError,
  defineAgent,
  run,
  tool,
  type Item,
  type RunEvent,
  type Session,
} from '../src/index.js';
import {
  collectEvents,
  gate,
  scriptedModel,
  sequentialIds,
  type Gate,
  type ScriptedStep,
} from '../src/testing/index.js';

/**
 * Guarantee 6: scratchpad: only a completed run commits. A run works on a
 * copy of the session; only a completed run commits, in ONE append, before
 * `run_completed`; cancelled and failed runs leave the session as it was.
 * Session load races cancel (checkpoint 12: session load); "the commit cannot
 * be cancelled".
 */

const initial: Item[] = [
  { type: 'user', id: 'old-u', text: 'earlier' },
  { type: 'assistant', id: 'old-a', text: 'earlier answer', toolCalls: [] },
];

/** A MemorySession whose `append` waits for a gate (slow I/O) and whose `load` may never settle. */
class SlowSession implements Session {
  readonly inner: MemorySession;
  appendCalls = 0;
  readonly appendStarted = gate();
  constructor(
    readonly appendGate?: Gate,
    readonly loadNever = false,
    items: Item[] = initial,
  ) {
    this.inner = new MemorySession(items);
  }
  load() {
    return this.loadNever ? new Promise<readonly Item[]>(() => {}) : Promise.resolve(this.inner.load());
  }
  append(items: readonly Item[]) {
    this.appendCalls++;
    this.appendStarted.open();
    return (this.appendGate?.promise ?? Promise.resolve()).then(() => this.inner.append(items));
  }
}

function agentWith(steps: (ScriptedStep | string)[], execute: () => unknown = () => 'tool out') {
  const model = scriptedModel(steps);
  const t = tool({ name: 't', description: 'd', parameters: z.object({}), execute });
  return { model, agent: defineAgent({ name: 'a', instructions: 'i', model, tools: [t] }) };
}
const types = (events: RunEvent[]) =>
  events.map((e) => (e.type === 'run_cancelled' ? `run_cancelled:${e.phase}` : e.type));

describe('session scratchpad (guarantee 6)', () => {
  it('the run works on a copy: the session is unchanged mid-run; the completed run commits its new Items once', async () => {
    const session = new MemorySession(initial);
    const before = session.items;
    const toolGate = gate<string>();
    const midRun: { items: readonly Item[]; writes: number }[] = [];
    const { model, agent } = agentWith([{ toolCalls: [{ name: 't' }] }, 'final'], () => {
      midRun.push({ items: session.items, writes: session.writes });
      queueMicrotask(() => toolGate.open('tool out'));
      return toolGate.promise;
    });
    const events = await collectEvents(run(agent, 'go', { session, idGenerator: sequentialIds() }));
    expect(midRun).toEqual([{ items: before, writes: 0 }]);
    expect(midRun[0]!.items).toBe(before);
    expect(model.requests[0]!.items).toEqual([...initial, { type: 'user', id: 'item-1', text: 'go' }]);
    expect(events.at(-1)).toMatchObject({ type: 'run_completed', output: 'final' });
    expect(session.writes).toBe(1);
    expect(session.items).toEqual([
      ...initial,
      { type: 'user', id: 'item-1', text: 'go' },
      { type: 'assistant', id: 'item-2', text: '', toolCalls: [{ callId: 'call_1_1', name: 't', arguments: '{}' }] },
      { type: 'tool_result', callId: 'call_1_1', output: 'tool out', isError: false },
      { type: 'assistant', id: 'item-3', text: 'final', toolCalls: [] },
    ]);
  });

  it('the commit (an async append) finishes before run_completed is delivered', async () => {
    const appendGate = gate();
    const session = new SlowSession(appendGate);
    const { agent } = agentWith(['final']);
    const seenAtCompleted: number[] = [];
    const events: RunEvent[] = [];
    const done = new Promise<void>((resolve) =>
      run(agent, 'go', { session }).subscribe({
        next: (e) => {
          events.push(e);
          if (e.type === 'run_completed') seenAtCompleted.push(session.inner.writes, session.inner.items.length);
        },
        complete: resolve,
      }),
    );
    await session.appendStarted.promise;
    await new Promise((r) => setImmediate(r));
    expect(events.map((e) => e.type)).not.toContain('run_completed');
    appendGate.open();
    await done;
    expect(seenAtCompleted).toEqual([1, initial.length + 2]);
    expect(session.appendCalls).toBe(1);
  });

  it('a cancelled run leaves the session exactly as it was (no write)', async () => {
    const session = new MemorySession(initial);
    const before = session.items;
    const cancel = new CancelSignal();
    const { agent } = agentWith([{ toolCalls: [{ name: 't' }] }, 'final'], () => {
      cancel.cancel('stop');
      return new Promise(() => {});
    });
    const events = await collectEvents(run(agent, 'go', { session, cancel }));
    expect(events.at(-1)).toMatchObject({ type: 'run_cancelled', phase: 'tool_call' });
    expect(session.writes).toBe(0);
    expect(session.items).toBe(before);
  });

  it('a failed run leaves the session exactly as it was (no write)', async () => {
    const session = new MemorySession(initial);
    const before = session.items;
    const { agent } = agentWith([{ text: 'partial text', error: new ModelCallError('bad', { status: 400 }) }]);
    const events = await collectEvents(run(agent, 'go', { session, retry: false }));
    expect(events.at(-1)).toMatchObject({ type: 'run_failed', stopReason: 'model_error' });
    expect(session.writes).toBe(0);
    expect(session.items).toBe(before);
  });

  it('a failing commit fails the run (session_error) and gives the drained steering back', async () => {
    const session: Session = { load: () => [], append: () => Promise.reject(new Error('disk full')) };
    const mailbox = new Mailbox();
    const token = mailbox.push('steer');
    const { agent } = agentWith(['final']);
    const events = await collectEvents(run(agent, 'go', { session, mailbox }));
    expect(events.at(-1)).toMatchObject({
      type: 'run_failed',
      stopReason: 'session_error',
      error: { message: 'disk full' },
      undelivered: [{ content: 'steer' }],
    });
    expect(mailbox.peek()).toEqual([token]);
  });
});

describe('a synchronously throwing append', () => {
  // A sync throw from append must become the run's failure, not escape after the outcome was decided.
  it('fails the run with session_error instead of hanging', async () => {
    const unhandled: unknown[] = [];
    const previous = config.onUnhandledError;
    config.onUnhandledError = (err) => unhandled.push(err);
    try {
      const session: Session = {
        load: () => [],
        append: () => {
          throw new Error('sync fail');
        },
      };
      const { agent } = agentWith(['final']);
      // Catches a hang, measures nothing: a generous bound, far below the test's timeout.
      const watchdog = new Promise<'hang'>((r) => setTimeout(() => r('hang'), 10_000));
      const outcome = await Promise.race([collectEvents(run(agent, 'go', { session })), watchdog]);
      expect(outcome).not.toBe('hang');
      expect((outcome as RunEvent[]).at(-1)).toMatchObject({
        type: 'run_failed',
        stopReason: 'session_error',
        error: { message: 'sync fail' },
      });
      expect(unhandled).toEqual([]);
    } finally {
      // RxJS reports an unhandled error from its own setTimeout (no delay), which no run scheduler drives; a timer of
      // ours with no delay, set after the run, runs after it (Node runs timers of one duration in order): no clock.
      await new Promise((r) => setTimeout(r, 0));
      config.onUnhandledError = previous;
    }
  });
});

describe('session load raced against cancel (checkpoint 12)', () => {
  it('a load that never resolves + cancel: run_cancelled at session_load, the first turn never starts', async () => {
    const session = new SlowSession(undefined, true);
    const cancel = new CancelSignal();
    const { model, agent } = agentWith(['never']);
    const events: RunEvent[] = [];
    const done = new Promise<void>((resolve) =>
      run(agent, 'go', { session, cancel }).subscribe({ next: (e) => events.push(e), complete: resolve }),
    );
    await new Promise((r) => setImmediate(r));
    cancel.cancel('stop');
    await done;
    expect(types(events)).toEqual(['run_started', 'run_cancelled:session_load']);
    expect(model.requests).toHaveLength(0);
    expect(session.inner.writes).toBe(0);
    expect(cancel.isCancelled).toBe(false); // re-armed
  });

  it('virtual time: an Observable load that never emits, cancelled at frame 5; the load is unsubscribed', () => {
    const ts = new TestScheduler((a, e) => expect(a).toEqual(e));
    ts.run(({ cold, expectSubscriptions }) => {
      const load$ = cold<readonly Item[]>('-');
      const session: Session = { load: () => load$, append: () => undefined };
      const cancel = new CancelSignal();
      const { model, agent } = agentWith(['never']);
      const out: string[] = [];
      run(agent, 'go', { session, cancel }).subscribe((e) => out.push(`${e.at}:${types([e])[0]}`));
      ts.schedule(() => cancel.cancel('stop'), 5);
      ts.flush();
      expect(out).toEqual(['0:run_started', '5:run_cancelled:session_load']);
      expectSubscriptions(load$.subscriptions).toBe('^----!');
      expect(model.requests).toHaveLength(0);
    });
  });
});

describe('a commit in progress is not cancellable', () => {
  it('a cancel during the commit: the run still completes; the cancel stays raised and ends the next run at turn_entry', async () => {
    const appendGate = gate();
    const session = new SlowSession(appendGate);
    const cancel = new CancelSignal();
    const { agent } = agentWith(['final', 'second run answer']);
    const first = collectEvents(run(agent, 'go', { session, cancel }));
    await session.appendStarted.promise;
    cancel.cancel('too late');
    appendGate.open();
    const events = await first;
    expect(events.at(-1)).toMatchObject({ type: 'run_completed', output: 'final' });
    expect(session.inner.writes).toBe(1);
    expect(cancel.isCancelled).toBe(true);
    expect(cancel.reason).toBe('too late');
    const next = await collectEvents(run(agent, 'again', { session, cancel }));
    expect(types(next)).toEqual(['run_started', 'run_cancelled:turn_entry']);
    expect(next.at(-1)).toMatchObject({ reason: 'too late' });
    expect(session.inner.writes).toBe(1);
    expect(cancel.isCancelled).toBe(false);
  });
});
