/**
 * The commit of a completed run is bounded. A session whose `append()` never settles (a database
 * that does not answer) used to keep the run from ending, cancel and the run deadline ignored, and kept
 * the session and mailbox locked. Now `append(items, { runId, signal })` gets a signal that fires at
 * `deadlines.commitMs` (on the run's scheduler), and the run ends `run_failed` with
 * `stopReason: 'session_error'`, `partial` (all of the run's new Items) and `undelivered` (its steering
 * given back). A cancel raised during the commit does not end it and stays raised for the next run.
 * A late write is harmless: MemorySession.append is idempotent per runId, its landing withdraws the
 * given-back steering it holds, and commitPartial of a run already stored stores nothing.
 */
import { VirtualTimeScheduler, throwError } from 'rxjs';
import { describe, expect, it } from 'vitest';
import {
  CancelSignal,
  DEFAULTS,
  Mailbox,
  MemorySession,
  RunFailedError,
  TimeoutError,
  commitPartial,
  defineAgent,
  run,
  serializeError,
  start,
  type Item,
  type RunEvent,
  type RunFailed,
  type Session,
} from '../src/index.js';
import { scriptedModel, sequentialIds } from '../src/testing/index.js';

type AppendOptions = { readonly runId?: string; readonly signal?: AbortSignal };

/**
 * A session over a MemorySession whose next append hangs (never settles) until `release()`, which
 * then does the write (a late write); later appends go straight through.
 */
function hangingSession() {
  const inner = new MemorySession();
  const appends: { items: readonly Item[]; options: AppendOptions | undefined }[] = [];
  let hang = true;
  let release: () => void = () => {
    throw new Error('nothing is hanging');
  };
  const session: Session = {
    load: () => inner.load(),
    append: (items: readonly Item[], options?: AppendOptions) => {
      appends.push({ items, options });
      if (!hang) return inner.append(items, options);
      hang = false;
      return new Promise<void>((resolve) => {
        release = () => {
          inner.append(items, options);
          resolve();
        };
      });
    },
  };
  return { inner, session, appends, release: () => release() };
}

function mailboxWithIds(): Mailbox {
  let n = 0;
  return new Mailbox({ idGenerator: () => `steer-${++n}` });
}

describe('a session write that never settles', () => {
  it('ends run_failed{session_error} at commitMs; a cancel during the commit stays raised; the locks are free', async () => {
    const scheduler = new VirtualTimeScheduler();
    const { inner, session, appends, release } = hangingSession();
    const mailbox = mailboxWithIds();
    const cancel = new CancelSignal();
    const steer = mailbox.push('also check the logs');
    const agent = defineAgent({ name: 'a', instructions: '', model: scriptedModel(['done', 'third'], { scheduler }) });
    const events: RunEvent[] = [];
    let second: RunEvent[] = [];
    run(agent, 'task', {
      session,
      mailbox,
      cancel,
      scheduler,
      idGenerator: sequentialIds(),
      deadlines: { runMs: 5_000 },
    }).subscribe((e) => {
      events.push(e);
      // The locks are released before the terminal event: a run started from its handler is not refused as busy.
      if (e.type === 'run_failed') second = collectNow(run(agent, 'again', { session, mailbox, cancel, scheduler }));
    });
    scheduler.schedule(() => cancel.cancel('stop'), 1_000);
    let atCommitEnd: string[] = [];
    scheduler.schedule(() => void (atCommitEnd = events.map((e) => e.type)), DEFAULTS.deadlines.commitMs - 1);
    scheduler.flush();

    // Neither the cancel at 1 000 nor the run deadline at 5 000 ended the commit.
    expect(atCommitEnd).toEqual([
      'run_started',
      'turn_started',
      'user_message_injected',
      'model_request_started',
      'text_delta',
      'model_response_completed',
      'turn_completed',
    ]);
    const failed = events.at(-1) as RunFailed;
    const items: Item[] = [
      // Queued before the run started: it goes before the input ("arrival order").
      { type: 'user', id: steer.id, text: 'also check the logs' },
      { type: 'user', id: 'item-1', text: 'task' },
      { type: 'assistant', id: 'item-2', text: 'done', toolCalls: [] },
    ];
    expect(failed).toEqual({
      type: 'run_failed',
      runId: 'run-1',
      seq: 7,
      turn: 1,
      at: DEFAULTS.deadlines.commitMs,
      stopReason: 'session_error',
      error: serializeError(new TimeoutError('commit', DEFAULTS.deadlines.commitMs)),
      partial: items,
      undelivered: [{ id: steer.id, content: 'also check the logs' }],
      usage: { inputTokens: 10, outputTokens: 5, totalTokens: 15, reported: true },
    });
    expect(failed.error).toMatchObject({ name: 'TimeoutError', kind: 'commit', timeoutMs: 30_000 });
    // append got the run's id and a signal that fired at the deadline, with the TimeoutError as its reason.
    expect(appends[0]!.items).toEqual(items);
    expect(appends[0]!.options?.runId).toBe('run-1');
    expect(appends[0]!.options?.signal?.aborted).toBe(true);
    expect(appends[0]!.options?.signal?.reason).toMatchObject({ name: 'TimeoutError', kind: 'commit' });

    // The cancel made during the commit stayed raised: the second run (same CancelSignal) ends at turn entry, and
    // re-arms it.
    expect(second.map((e) => e.type)).toEqual(['run_started', 'run_cancelled']);
    expect(second.at(-1)).toMatchObject({
      type: 'run_cancelled',
      stopReason: 'cancelled',
      reason: 'stop',
      phase: 'turn_entry',
    });
    expect(cancel.isCancelled).toBe(false);
    expect(scheduler.actions).toHaveLength(0);

    // The late write lands: the session has the run's Items once, and the given-back steering it holds is
    // withdrawn from the mailbox ("a late write withdraws its steering"); commitPartial of that run stores
    // nothing and has nothing left to withdraw.
    expect(mailbox.peek()).toEqual([steer]);
    release();
    await settled();
    expect(inner.items).toEqual(items);
    expect(mailbox.size).toBe(0);
    await expect(commitPartial(session, failed, mailbox)).resolves.toEqual([]);
    expect(inner.items).toEqual(items);
    expect(mailbox.remove(steer)).toBe(false);

    // A third run with a fresh CancelSignal on the same session and mailbox completes and commits once.
    const third = collectNow(run(agent, 'third task', { session, mailbox, cancel: new CancelSignal(), scheduler }));
    scheduler.flush();
    await settled();
    expect(third.at(-1)).toMatchObject({ type: 'run_completed', stopReason: 'completed', output: 'third' });
    expect(inner.items.map((i) => (i.type === 'tool_result' ? i.output : i.text))).toEqual([
      'also check the logs',
      'task',
      'done',
      'third task',
      'third',
    ]);
  });

  it('commitPartial before the late write: the write it made first is the one kept, the late one stores nothing', async () => {
    const scheduler = new VirtualTimeScheduler();
    const { inner, session, release } = hangingSession();
    const mailbox = mailboxWithIds();
    const steer = mailbox.push('steer');
    const agent = defineAgent({ name: 'a', instructions: '', model: scriptedModel(['done'], { scheduler }) });
    const events = collectNow(run(agent, 'task', { session, mailbox, scheduler, deadlines: { commitMs: 2_000 } }));
    scheduler.flush();
    const failed = events.at(-1) as RunFailed;
    expect(failed).toMatchObject({
      type: 'run_failed',
      at: 2_000,
      stopReason: 'session_error',
      error: { kind: 'commit', timeoutMs: 2_000 },
    });
    await expect(commitPartial(session, failed, mailbox)).resolves.toEqual([steer.id]);
    expect(inner.items).toEqual(failed.partial);
    release();
    await settled();
    expect(inner.items).toEqual(failed.partial);
    expect(inner.items.filter((i) => i.type === 'user' && i.id === steer.id)).toHaveLength(1);
  });

  it('commitMs: false leaves the commit unbounded: nothing is scheduled, the run ends when the write does', async () => {
    const scheduler = new VirtualTimeScheduler();
    const { session, release } = hangingSession();
    const agent = defineAgent({ name: 'a', instructions: '', model: scriptedModel(['done'], { scheduler }) });
    const events = collectNow(run(agent, 'task', { session, scheduler, deadlines: { commitMs: false } }));
    scheduler.flush();
    expect(events.at(-1)?.type).toBe('turn_completed');
    expect(scheduler.actions).toHaveLength(0);
    release();
    await settled();
    expect(events.at(-1)).toMatchObject({ type: 'run_completed', stopReason: 'completed', output: 'done' });
  });

  it('handle.result rejects with a RunFailedError (session_error) whose cause is the TimeoutError', async () => {
    const scheduler = new VirtualTimeScheduler();
    const { session } = hangingSession();
    const agent = defineAgent({ name: 'a', instructions: '', model: scriptedModel(['done'], { scheduler }) });
    const handle = start(agent, 'task', { session, scheduler });
    scheduler.flush();
    const error = await handle.result.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RunFailedError);
    expect(error).toMatchObject({
      stopReason: 'session_error',
      partial: [
        { type: 'user', text: 'task' },
        { type: 'assistant', text: 'done' },
      ],
    });
    expect((error as RunFailedError).cause).toBeInstanceOf(TimeoutError);
  });
});

describe('an append that fails is a session_error, not an internal_error', () => {
  const failing: [string, Session['append']][] = [
    [
      'throws',
      () => {
        throw new Error('disk full');
      },
    ],
    ['rejects', () => Promise.reject(new Error('disk full'))],
    ['errors (Observable)', () => throwError(() => new Error('disk full'))],
  ];
  for (const [how, append] of failing) {
    it(`an append that ${how}: run_failed{session_error} with the error, partial and undelivered, the locks free`, async () => {
      const mailbox = mailboxWithIds();
      const steer = mailbox.push('steer');
      const session: Session = { load: () => [], append };
      const agent = defineAgent({ name: 'a', instructions: '', model: scriptedModel(['done', 'next']) });
      const events = await collect(run(agent, 'task', { session, mailbox, idGenerator: sequentialIds() }));
      expect(events.at(-1)).toMatchObject({
        type: 'run_failed',
        stopReason: 'session_error',
        error: { name: 'Error', message: 'disk full' },
        partial: [
          { type: 'user', id: steer.id, text: 'steer' }, // queued before the run: ahead of the input
          { type: 'user', id: 'item-1', text: 'task' },
          { type: 'assistant', id: 'item-2', text: 'done', toolCalls: [] },
        ],
        undelivered: [{ id: steer.id, content: 'steer' }],
      });
      const next = await collect(run(agent, 'next', { session: new MemorySession(), mailbox }));
      expect(next.at(-1)).toMatchObject({ type: 'run_completed', output: 'next' });
    });
  }
});

describe('MemorySession.append is idempotent per runId', () => {
  const a: Item = { type: 'user', id: 'u1', text: 'hi' };
  const b: Item = { type: 'user', id: 'u2', text: 'again' };

  it('a second append with the same runId stores nothing; another runId or none stores', () => {
    const session = new MemorySession();
    session.append([a], { runId: 'r1' });
    session.append([a, b], { runId: 'r1' });
    expect(session.items).toEqual([a]);
    session.append([b], { runId: 'r2' });
    expect(session.items).toEqual([a, b]);
    session.append([b]);
    session.append([b]);
    expect(session.items).toEqual([a, b, b, b]);
    expect(session.writes).toBe(5);
  });

  it('commitPartial takes a terminal event, a RunFailedError/RunCancelledError, or a bare partial (not idempotent)', async () => {
    const session = new MemorySession();
    const ended = { runId: 'r9', partial: [a] };
    await commitPartial(session, ended);
    await commitPartial(session, ended);
    expect(session.items).toEqual([a]);
    await commitPartial(session, [b]);
    await commitPartial(session, [b]);
    expect(session.items).toEqual([a, b, b]);
    await expect(commitPartial(session, { runId: 'r10' } as never)).rejects.toThrow(TypeError);
    await expect(commitPartial(session, 'x' as never)).rejects.toThrow(TypeError);
  });
});

/** Lets the promise callbacks queued so far run (a late write, a settled append). */
const settled = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** Subscribes and returns the array events are pushed to as they come. */
function collectNow(events$: ReturnType<typeof run>): RunEvent[] {
  const out: RunEvent[] = [];
  events$.subscribe((e) => out.push(e));
  return out;
}

function collect(events$: ReturnType<typeof run>): Promise<RunEvent[]> {
  return new Promise((resolve) => {
    const out: RunEvent[] = [];
    events$.subscribe({ next: (e) => out.push(e), complete: () => resolve(out) });
  });
}
