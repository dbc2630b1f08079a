import { Observable } from 'rxjs';
import type { Item } from '../items.js';
import type { MailboxToken } from '../mailbox/mailbox.js';
import type { RunContext } from './run-context.js';

/**
 * "Drain after turnStarted": takes every queued item of the run's mailbox, in order; each becomes a
 * `user` Item of the turn's input, with its token's id, reported by `user_message_injected`.
 * "Arrival order": items that were queued before the run started (`queuedBefore`, first turn only)
 * go just before the input's last `user` Item (after the input when it has none); the rest follow.
 */
export function drain$(rc: RunContext<any>, queuedBefore: ReadonlySet<MailboxToken>): Observable<never> {
  return new Observable<never>((subscriber) => {
    if (rc.mailbox.size === 0) return subscriber.complete();
    const tokens = rc.mailbox.take();
    // In the first turn the run's Items are exactly the input.
    let at = queuedBefore.size > 0 ? lastUserIndex(rc.totals.scratch.items) : -1;
    for (let i = 0; i < tokens.length && !subscriber.closed; i++) {
      const token = tokens[i]!;
      const index = at !== -1 && queuedBefore.has(token) ? at++ : undefined;
      // The first event holds every token taken: a cancel in its handler gives them all back.
      const fact = i === 0 ? { taken: tokens, index } : { index };
      rc.emit({ type: 'user_message_injected', id: token.id, content: token.content }, fact);
    }
    subscriber.complete();
  });
}

function lastUserIndex(items: readonly Item[]): number {
  for (let i = items.length - 1; i >= 0; i--) if (items[i]!.type === 'user') return i;
  return -1;
}
