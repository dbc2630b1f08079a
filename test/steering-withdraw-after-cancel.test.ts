import { NEVER } from 'rxjs';
import { describe, expect, it } from 'vitest';
import {
  CancelSignal,
  Mailbox,
  MemorySession,
  commitPartial,
  defineAgent,
  run,
  type Item,
  type Session,
} from '../src/index.js';
import { collectEvents, gate, scriptedModel } from '../src/testing/index.js';

/**
 * Withdrawing a steer after a cancel. A run drains
 * "use plan B" and is cancelled mid-answer, so the steer is given back in
 * `partial` and stays pending in the mailbox. Withdrawn before `commitPartial`:
 * it is neither written nor sent to a model. Withdrawn while the append is in
 * flight: `remove` says false and the steer is written once and not redelivered.
 * A failing append gives it back to the front, removable again.
 */

/** A cancelled run that had drained `steer`; resolves with its partial (the steer given back). */
async function cancelledWithSteer(session: Session) {
  const mailbox = new Mailbox();
  const cancel = new CancelSignal();
  const model = scriptedModel([{ text: ['Hel', 'lo'], hold: NEVER }, 'second answer']);
  const agent = defineAgent({ name: 'a', instructions: '', model });
  const steer = mailbox.push('use plan B');
  const partial = await new Promise<readonly Item[]>((resolve) =>
    run(agent, 'task', { mailbox, session, cancel }).subscribe((e) => {
      if (e.type === 'text_delta' && e.delta === 'lo') cancel.cancel('stop');
      if (e.type === 'run_cancelled') resolve(e.partial);
    }),
  );
  expect(partial.map((i) => i.type === 'user' && i.text)).toContain('use plan B');
  return { mailbox, steer, partial, model, agent };
}

describe('a withdrawal acknowledged after a cancel is honoured by commitPartial', () => {
  it('withdrawn before commitPartial: the steer is not written and never reaches a model', async () => {
    const session = new MemorySession();
    const { mailbox, steer, partial, model, agent } = await cancelledWithSteer(session);
    expect(mailbox.remove(steer)).toBe(true);
    expect(await commitPartial(session, partial, mailbox)).toEqual([]);
    expect(session.items.map((i) => (i.type === 'user' ? i.text : i.type))).toEqual(['task', 'assistant']);
    await collectEvents(run(agent, 'next', { mailbox, session }));
    expect(model.requests[1]!.items.some((i) => i.type === 'user' && i.text === 'use plan B')).toBe(false);
  });

  it('during an async append: the withdrawal is refused (false), the steer is committed once and not redelivered', async () => {
    const mem = new MemorySession();
    const written = gate();
    const session = {
      load: () => mem.load(),
      append: (items: readonly Item[]) => written.promise.then(() => mem.append(items)),
    };
    const { mailbox, steer, partial, model, agent } = await cancelledWithSteer(session);
    const committing = commitPartial(session, partial, mailbox);
    expect(mailbox.remove(steer)).toBe(false);
    expect(mailbox.size).toBe(0);
    written.open();
    expect(await committing).toEqual([steer.id]);
    await collectEvents(run(agent, 'next', { mailbox, session }));
    const plans = model.requests[1]!.items.filter((i) => i.type === 'user' && i.text === 'use plan B');
    expect(plans).toHaveLength(1);
  });

  it('a failing append gives the steer back to the front, removable again', async () => {
    const session = { load: () => [] as Item[], append: () => Promise.reject(new Error('disk full')) };
    const { mailbox, steer, partial } = await cancelledWithSteer(session);
    const later = mailbox.push('later');
    await expect(commitPartial(session, partial, mailbox)).rejects.toThrow('disk full');
    expect(mailbox.peek()).toEqual([steer, later]);
    expect(mailbox.remove(steer)).toBe(true);
  });
});
