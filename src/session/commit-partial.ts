import type { Item } from '../items.js';
import type { Mailbox } from '../mailbox/mailbox.js';
import { toLastValue } from '../last-value.js';
import type { Session } from './session.js';

/**
 * What a run that did not complete left to commit: its `run_cancelled` / `run_failed` event or the
 * `RunCancelledError` / `RunFailedError` of `handle.result` (anything with `runId` and `partial`).
 */
export interface EndedRun {
  readonly runId: string;
  readonly partial: readonly Item[];
}

/**
 * Commits a cancelled or failed run's `partial` to `session` in one write
 * (guarantee 7: no steering lost or duplicated) and settles the steering it contains with
 * `mailbox`, so nothing is lost, duplicated or delivered after a withdrawal:
 * - given-back items that `partial` contains are taken off the queue before
 *   the write (a `remove()` during it says false) and are delivered once it
 *   succeeds; if `append` fails they go back to the front, untouched;
 * - items the user withdrew with `remove()` are left out of what is written.
 *
 * `ended` is the run's terminal event or error: the write carries its `runId`, so it is
 * idempotent ("a late write is harmless"): for a run the session already stored (a
 * `session_error` run whose write landed late, or a second `commitPartial`) it stores
 * nothing, and still withdraws the given-back steering `partial` contains. A bare `partial`
 * array is accepted too, without a `runId`: then each call writes again.
 *
 * Resolves with the ids taken off the queue, in mailbox order. With a
 * synchronous `append` (as `MemorySession`'s) all of it is done before
 * `commitPartial` returns. An empty `partial` writes nothing. Rejects with
 * `TypeError` when `ended` has no `partial` array, or with `append`'s error.
 *
 * @example
 * run(agent, 'task', { session, mailbox, cancel }).subscribe(async (e) => {
 *   if (e.type === 'run_cancelled' || e.type === 'run_failed') await commitPartial(session, e, mailbox);
 * });
 */
export function commitPartial(
  session: Session,
  ended: EndedRun | readonly Item[],
  mailbox?: Mailbox,
): Promise<string[]> {
  return new Promise<string[]>((resolve, reject) => {
    const bare = Array.isArray(ended);
    const partial: unknown = bare ? ended : (ended as EndedRun | null)?.partial;
    if (!Array.isArray(partial)) {
      const what = 'a terminal event or run error with a partial array, or an array of Items';
      return reject(new TypeError(`commitPartial: ended must be ${what}`));
    }
    const runId = bare ? undefined : (ended as EndedRun).runId;
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
      const options = typeof runId === 'string' ? { runId } : {};
      toLastValue(session.append(items, options)).subscribe({ error: fail, complete: done });
    } catch (err) {
      fail(err);
    }
  });
}
