import { Observable, concat } from 'rxjs';
import { describeValue } from '../describe.js';
import { ItemSchema, type Item } from '../items.js';
import { toLastValue } from '../last-value.js';
import type { Session } from '../session/session.js';
import { repairHistory } from './repair.js';
import type { RunContext } from './run-context.js';
import { SessionFailure } from './session-failure.js';
import { stageAt } from './waits.js';

/**
 * The session's side of a run start, one stage at `session_load` (checkpoint 12: session load): the
 * lease first when the session has `acquire` (see `SessionLease`), then `load()`, where the run claims
 * its journal (`RunJournalWriter.claim`: a run refused by the lease discards nothing). Emits the history,
 * repaired before it is sent ("the history is valid on the wire"; the stored Items stay as they are).
 * Errors with a {@link SessionFailure}: a refused lease is `configuration_error`; a load that throws,
 * rejects, errors, or gives anything but an array of Items (the store's bad data) is `session_error`.
 */
export function openSession$(rc: RunContext<any>, session: Session): Observable<readonly Item[]> {
  return stageAt(rc, 'session_load', () => {
    const load$ = history$(rc, session);
    return typeof session.acquire === 'function' ? concat(rc.lease.acquire$(session), load$) : load$;
  });
}

/** `load()`, its history checked and repaired; every failure is the store's (`session_error`). */
function history$(rc: RunContext<any>, session: Session): Observable<readonly Item[]> {
  return new Observable<readonly Item[]>((subscriber) => {
    const failed = (error: unknown): void => subscriber.error(new SessionFailure('session_error', error));
    rc.journal.claim(); // past the lease: the run's journal is its own (a cancel or failure now discards it)
    let loaded: Observable<unknown>;
    try {
      loaded = toLastValue(session.load());
    } catch (error) {
      return failed(error);
    }
    return loaded.subscribe({
      next: (value) => {
        let history: Item[];
        try {
          history = repairHistory(historyOf(value), () => rc.nextId());
        } catch (error) {
          return failed(error);
        }
        subscriber.next(history);
      },
      error: failed,
      complete: () => subscriber.complete(),
    });
  });
}

/**
 * A copy of what `session.load()` gave, each entry checked to be an Item (foreign values are never
 * trusted: a store may hand back a corrupt row). `undefined` and `null` are an empty history.
 * Throws `TypeError` naming the first entry that is not an Item.
 */
function historyOf(value: unknown): Item[] {
  if (value === undefined || value === null) return [];
  let items: unknown[] | undefined;
  try {
    items = Array.isArray(value) ? [...(value as unknown[])] : undefined;
  } catch {
    items = undefined; // a revoked Proxy, or an array Proxy whose traps throw
  }
  if (items === undefined) {
    throw new TypeError(`session.load() must give an array of Items, got ${describeValue(value)}`);
  }
  for (let i = 0; i < items.length; i++) {
    const why = notAnItem(items[i]);
    if (why !== undefined) throw new TypeError(`session.load() must give an array of Items: item ${i} ${why}`);
  }
  return items as Item[];
}

/** Why `value` is not an Item (its first issue, with its path), or undefined when it is one. */
function notAnItem(value: unknown): string | undefined {
  try {
    const parsed = ItemSchema.safeParse(value);
    if (parsed.success) return undefined;
    const issue = parsed.error.issues[0];
    const path = issue?.path.map((p) => (typeof p === 'number' ? `[${p}]` : `.${String(p)}`)).join('') ?? '';
    return `is not an Item (${path === '' ? '' : `${path.replace(/^\./, '')}: `}${issue?.message ?? 'invalid'})`;
  } catch {
    return 'cannot be read';
  }
}
