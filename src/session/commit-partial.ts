import type { Item } from '../items.js';
import type { Mailbox } from '../mailbox/mailbox.js';
import { toLastValue } from '../engine/hooks.js';
import type { Session } from './session.js';

/**
 * Commits a cancelled or failed run's `partial` to `session` in one write
 * (guarantee 7: no steering lost or duplicated) and settles the steering it contains with
 * `mailbox`, so nothing is lost, duplicated or delivered after a withdrawal:
 * - given-back items that `partial` contains are taken off the queue before
 *   the write (a `remove()` during it says false) and are delivered once it
 *   succeeds; if `append` fails they go back to the front, untouched;
 * - items the user withdrew with `remove()` are left out of what is written.
 * Resolves with the ids taken off the queue, in mailbox order. With a
 * synchronous `append` (as `MemorySession`'s) all of it is done before
 * `commitPartial` returns. An empty `partial` writes nothing. Rejects with
 * `TypeError` when `partial` is not an array, or with `append`'s error.
 *
 * @example
 * run(agent, 'task', { session, mailbox, cancel }).subscribe(async (e) => {
 *   if (e.type === 'run_cancelled') await commitPartial(session, e.partial, mailbox);
 * });
 */
export function commitPartial(session: Session, partial: readonly Item[], mailbox?: Mailbox): Promise<string[]> {
  return new Promise<string[]>((resolve, reject) => {
    if (!Array.isArray(partial)) return reject(new TypeError('commitPartial: partial must be an array of Items'));
    const userIds = new Set(partial.filter((i) => i.type === 'user').map((i) => i.id));
    const held = mailbox ? mailbox.takeById(userIds) : [];
    const withdrawn = new Set(mailbox ? [...userIds].filter((id) => mailbox.wasWithdrawn(id)) : []);
    const items = withdrawn.size > 0 ? partial.filter((i) => i.type !== 'user' || !withdrawn.has(i.id)) : partial;
    const done = (): void => {
      mailbox?.markDelivered(held);
      mailbox?.forgetWithdrawn(withdrawn); // written without them: the mailbox need not remember them any longer
      resolve(held.map((t) => t.id));
    };
    const fail = (err: unknown): void => {
      mailbox?.giveBack(held);
      reject(err);
    };
    if (items.length === 0) return done();
    try {
      toLastValue(session.append(items)).subscribe({ error: fail, complete: done });
    } catch (err) {
      fail(err);
    }
  });
}
