import { EMPTY, Observable, catchError, concatMap, defer, expand, filter, of } from 'rxjs';
import { describeValue } from '../describe.js';
import type { Item } from '../items.js';
import { toLastValue } from '../last-value.js';
import type { MailboxToken } from '../mailbox/mailbox.js';
import type { Session } from '../session/session.js';
import { ModelCalls } from './model-call.js';
import { callIdsOf, repairHistory } from './repair.js';
import { stopReasonOf, type Outcome, type RunContext } from './run-context.js';
import type { Fact } from './totals.js';
import { NEXT_TURN, turn$, type Decision, type Turns } from './turn.js';
import { stageAt } from './waits.js';

const NO_HISTORY: readonly Item[] = Object.freeze([]);

/**
 * The run loop: load the session (checkpoint 12: session load), then turns, one after another
 * (`expand` over each turn's decision), until one decides how the run ends. Emits that outcome;
 * a failure of any stage becomes a failed outcome (the usage of failed attempts it billed included).
 */
export function runLoop$(rc: RunContext<any>, queuedBefore: ReadonlySet<MailboxToken>): Observable<Outcome> {
  const models = new ModelCalls(rc);
  const { session } = rc.opts;
  const turns$ = (history: readonly Item[]): Observable<Decision> => {
    const turns: Turns = { rc, history, models, queuedBefore, firstTurn: repairedInput(rc, history) };
    return turn$(turns, 1).pipe(expand((d: Decision) => (d === NEXT_TURN ? turn$(turns, rc.turn + 1) : EMPTY)));
  };
  // Without a session nothing is loaded: the turns start at once, with no operator kept alive between
  // (a concatMap over one value holds ≈ 1.6 KiB for the whole run: BENCHMARKS.md, memory).
  const decisions$ = session
    ? stageAt(rc, 'session_load', () => load$(rc, session)).pipe(concatMap(turns$))
    : defer(() => turns$(NO_HISTORY));
  return decisions$.pipe(
    filter((d): d is Outcome => d !== NEXT_TURN),
    catchError((error: unknown) => {
      const failed: Outcome = { kind: 'failed', stopReason: stopReasonOf(error), error, billed: models.takeBilled() };
      return of(failed);
    }),
  );
}

/**
 * The session's history, repaired before it is sent ("the history is valid on the wire"); the stored
 * Items stay as they are.
 */
function load$(rc: RunContext<any>, session: Session): Observable<readonly Item[]> {
  return new Observable<readonly Item[]>((subscriber) =>
    toLastValue(session.load()).subscribe({
      next: (items) => {
        const history = historyOf(items);
        if (history) subscriber.next(repairHistory(history, () => rc.nextId()));
        else subscriber.error(new TypeError(`session.load() must give an array of Items, got ${describeValue(items)}`));
      },
      error: (e) => subscriber.error(e),
      complete: () => subscriber.complete(),
    }),
  );
}

/** A copy of what `session.load()` gave; `undefined` unless it is an array (foreign values are never trusted). */
function historyOf(items: unknown): Item[] | undefined {
  if (items === undefined || items === null) return [];
  try {
    return Array.isArray(items) ? [...(items as Item[])] : undefined;
  } catch {
    return undefined; // a revoked Proxy, or an array Proxy whose traps throw
  }
}

/**
 * An `Item[]` input is repaired on its own when the run is made; once a history is loaded, call ids
 * it shares with the history are renamed too ("the history is valid on the wire"). Returns the
 * first turn's fact carrying that input, or undefined when nothing collides.
 */
function repairedInput(rc: RunContext<any>, history: readonly Item[]): Fact | undefined {
  if (history.length === 0) return undefined;
  const input = rc.totals.scratch.items; // only the input so far: nothing else is added before the first turn
  const historyIds = callIdsOf(history);
  if (historyIds.size === 0) return undefined;
  const collides = input.some((i) => i.type === 'assistant' && i.toolCalls.some((c) => historyIds.has(c.callId)));
  return collides ? { input: repairHistory(input, () => rc.nextId(), historyIds) } : undefined;
}
