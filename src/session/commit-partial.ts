import { defer, lastValueFrom } from 'rxjs';
import type { Item } from '../items.js';
import type { Mailbox } from '../mailbox/mailbox.js';
import { toLastValue } from '../engine/hooks.js';
import type { Session } from './session.js';

/**
 * Commits a cancelled or failed run's `partial` to `session` in one write
 * (DESIGN.md §3, guarantee 7), then withdraws from `mailbox` the given-back
 * steering items that `partial` already contains (matched by token id), so
 * nothing is delivered twice. Resolves with the ids withdrawn. Throws
 * `TypeError` when `partial` is not an array; a failing `append` rejects and
 * leaves the mailbox untouched.
 *
 * @example
 * run(agent, 'task', { session, mailbox, cancel }).subscribe(async (e) => {
 *   if (e.type === 'run_cancelled') await commitPartial(session, e.partial, mailbox);
 * });
 */
export async function commitPartial(session: Session, partial: readonly Item[], mailbox?: Mailbox): Promise<string[]> {
  if (!Array.isArray(partial)) throw new TypeError('commitPartial: partial must be an array of Items');
  if (partial.length > 0) await lastValueFrom(defer(() => toLastValue(session.append(partial))), { defaultValue: undefined });
  if (!mailbox) return [];
  const ids = new Set(partial.filter((i) => i.type === 'user').map((i) => i.id));
  const withdrawn: string[] = [];
  for (const token of mailbox.peek()) if (ids.has(token.id) && mailbox.remove(token)) withdrawn.push(token.id);
  return withdrawn;
}
