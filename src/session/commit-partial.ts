import type { Item } from '../items.js';
import type { Mailbox } from '../mailbox/mailbox.js';
import { toLastValue } from '../engine/hooks.js';
import type { Session } from './session.js';

/**
 * Commits a cancelled or failed run's `partial` to `session` in one write
 * (DESIGN.md §3, guarantee 7), then withdraws from `mailbox` the given-back
 * steering items that `partial` already contains (matched by token id), so
 * nothing is delivered twice. Resolves with the ids withdrawn.
 *
 * The withdrawal happens as soon as `append` completes: synchronously, before
 * `commitPartial` returns, when `append` is synchronous (as `MemorySession`'s
 * is), so a run started right after cannot take those items again. With an
 * async `append`, await the Promise before starting the next run on the
 * same mailbox. An empty `partial` writes nothing. Rejects with `TypeError`
 * when `partial` is not an array; a failing `append` rejects and leaves the
 * mailbox untouched.
 *
 * @example
 * run(agent, 'task', { session, mailbox, cancel }).subscribe(async (e) => {
 *   if (e.type === 'run_cancelled') await commitPartial(session, e.partial, mailbox);
 * });
 */
export function commitPartial(session: Session, partial: readonly Item[], mailbox?: Mailbox): Promise<string[]> {
  return new Promise<string[]>((resolve, reject) => {
    if (!Array.isArray(partial)) return reject(new TypeError('commitPartial: partial must be an array of Items'));
    const withdraw = (): void => resolve(mailbox ? withdrawContained(mailbox, partial) : []);
    if (partial.length === 0) return withdraw();
    try {
      toLastValue(session.append(partial)).subscribe({ error: reject, complete: withdraw });
    } catch (err) {
      reject(err);
    }
  });
}

/** Removes the queued tokens whose id is a `user` Item of `items`; returns their ids, in mailbox order. */
function withdrawContained(mailbox: Mailbox, items: readonly Item[]): string[] {
  const ids = new Set(items.filter((i) => i.type === 'user').map((i) => i.id));
  const withdrawn: string[] = [];
  for (const token of mailbox.peek()) if (ids.has(token.id) && mailbox.remove(token)) withdrawn.push(token.id);
  return withdrawn;
}
