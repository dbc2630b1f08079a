/**
 * Guarantee 7: no steering lost or duplicated, for a commit that passes `deadlines.commitMs`. The run
 * ends `run_failed{session_error}` and gives its steering back to the front of the mailbox (listed
 * in `undelivered`). When the hung write then lands, the session holds that steering; the mailbox
 * queued it too, so the next run on the same session and mailbox delivered it a second time (the
 * model saw "S" twice) unless the application called `commitPartial`. The rule now, "a late write
 * withdraws its steering": when the write lands, what of its steering is still queued is taken off
 * the mailbox and marked delivered (what `commitPartial` does). A late write that fails leaves the
 * steering queued, for the next run to deliver once.
 */
import { VirtualTimeScheduler } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { Mailbox, MemorySession, defineAgent, run, type Item, type RunEvent, type Session } from '../src/index.js';
import { scriptedModel } from '../src/testing/index.js';

/** A session over a MemorySession whose first append hangs until `land()` (it stores) or `fail()`. */
function hangingSession() {
  const inner = new MemorySession();
  let land: () => void = () => {};
  let fail: () => void = () => {};
  let first = true;
  const session: Session = {
    load: () => inner.load(),
    append: (items: readonly Item[], options) => {
      if (!first) return inner.append(items, options);
      first = false;
      return new Promise<void>((resolve, reject) => {
        land = () => (inner.append(items, options), resolve());
        fail = () => reject(new Error('connection lost'));
      });
    },
  };
  return { inner, session, land: () => land(), fail: () => fail() };
}

const settled = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
const texts = (items: readonly Item[]): string[] => items.map((i) => (i.type === 'tool_result' ? i.output : i.text));

function collectNow(events$: ReturnType<typeof run>): RunEvent[] {
  const out: RunEvent[] = [];
  events$.subscribe((e) => out.push(e));
  return out;
}

describe('a commit that lands after commitMs', () => {
  it('the steering it holds is withdrawn from the mailbox: the next run does not deliver it again', async () => {
    const scheduler = new VirtualTimeScheduler();
    const { inner, session, land } = hangingSession();
    const mailbox = new Mailbox();
    const model = scriptedModel(['one', 'two'], { scheduler });
    const agent = defineAgent({ name: 'a', instructions: '', model });
    const steer = mailbox.push('S');
    const first = collectNow(run(agent, 'task 1', { session, mailbox, scheduler, deadlines: { commitMs: 20 } }));
    scheduler.flush();
    expect(first.at(-1)).toMatchObject({
      type: 'run_failed',
      at: 20,
      stopReason: 'session_error',
      undelivered: [{ id: steer.id, content: 'S' }],
    });
    expect(mailbox.peek()).toEqual([steer]);

    land();
    await settled();
    expect(texts(inner.items)).toEqual(['S', 'task 1', 'one']);
    expect(mailbox.size).toBe(0); // withdrawn: it was delivered by the write that landed
    expect(mailbox.remove(steer)).toBe(false);

    const second = collectNow(run(agent, 'task 2', { session, mailbox, scheduler }));
    scheduler.flush();
    await settled();
    expect(second.at(-1)).toMatchObject({ type: 'run_completed', output: 'two', undelivered: [] });
    expect(second.some((e) => e.type === 'user_message_injected')).toBe(false);
    const users = model.requests[1]!.items.flatMap((i) => (i.type === 'user' ? [i.text] : []));
    expect(users).toEqual(['S', 'task 1', 'task 2']);
    expect(texts(inner.items)).toEqual(['S', 'task 1', 'one', 'task 2', 'two']);
  });

  it('a late write that fails stored nothing: the steering stays queued, the next run delivers it once', async () => {
    const scheduler = new VirtualTimeScheduler();
    const { inner, session, fail } = hangingSession();
    const mailbox = new Mailbox();
    const model = scriptedModel(['one', 'two'], { scheduler });
    const agent = defineAgent({ name: 'a', instructions: '', model });
    const steer = mailbox.push('S');
    collectNow(run(agent, 'task 1', { session, mailbox, scheduler, deadlines: { commitMs: 20 } }));
    scheduler.flush();
    fail();
    await settled();
    expect(inner.items).toEqual([]);
    expect(mailbox.peek()).toEqual([steer]);

    const second = collectNow(run(agent, 'task 2', { session, mailbox, scheduler }));
    scheduler.flush();
    await settled();
    expect(second.at(-1)).toMatchObject({ type: 'run_completed', output: 'two', undelivered: [] });
    expect(texts(inner.items)).toEqual(['S', 'task 2', 'two']);
    expect(mailbox.size).toBe(0);
  });
});
