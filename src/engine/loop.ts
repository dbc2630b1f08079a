import { Observable, defer } from 'rxjs';
import { isInstance } from '../describe.js';
import type { Item } from '../items.js';
import type { MailboxToken } from '../mailbox/mailbox.js';
import { outputContext } from '../guardrails/output.js';
import { continuedTurn$ } from './continued-turn.js';
import { ModelCalls } from './model-call.js';
import { callIdsOf, repairHistory } from './repair.js';
import { stopReasonOf, type Outcome, type RunContext } from './run-context.js';
import { SessionFailure } from './session-failure.js';
import { resumeTurn$ } from './resume-turn.js';
import { openSession$ } from './session-load.js';
import type { Fact } from './totals.js';
import { catchAs, expandOn } from './loop-operators.js';
import { concatEach } from './sequence.js';
import { NEXT_TURN, turn$, type Decision, type Turns } from './turn.js';

const NO_HISTORY: readonly Item[] = Object.freeze([]);

/**
 * The run loop: open the session (its lease, then its load: checkpoint 12: session load), then turns, one
 * after another (an `expand` over each turn's decision, hand-written: sequence.ts), until one decides how the run
 * ends. Emits that outcome; a failure of any stage becomes a failed outcome (the usage of failed
 * attempts it billed included; a session's failure with the stop reason it gave). What stays alive while the run
 * is idle holds the run's `Turns` and its model calls, and shared functions only (BENCHMARKS.md, section 6.1).
 */
export function runLoop$(rc: RunContext<any>, queuedBefore: ReadonlySet<MailboxToken>): Observable<Outcome> {
  // 'hold' and 'parallel' output guardrails see the answer's text before the run does (docs/guardrails.md).
  const models = new ModelCalls(rc, outputContext(rc));
  const { session } = rc.opts;
  // Without a session nothing is loaded: the turns start at once, with no operator kept alive between
  // (a concatMap over one value holds ≈ 1.6 KiB for the whole run: BENCHMARKS.md, memory).
  const outcomes$ = session
    ? openSession$(rc, session).pipe(
        concatEach((history: readonly Item[]) => turns$(rc, models, queuedBefore, history)),
      )
    : defer(() => turns$(rc, models, queuedBefore, NO_HISTORY));
  return catchAs(outcomes$, failedOutcome, models);
}

/** The run's turns after `history` (loaded from its session, or none). */
function turns$(
  rc: RunContext<any>,
  models: ModelCalls,
  queuedBefore: ReadonlySet<MailboxToken>,
  history: readonly Item[],
): Observable<Outcome> {
  // A resumed run goes on in its suspended turn; its input was repaired by the run that suspended.
  // A continued run (`resumeRun()`) goes on after its last journalled turn, its input as journalled.
  const { resume, continued } = rc.internals;
  const goesOn = resume !== undefined || continued !== undefined;
  const firstTurn = goesOn ? undefined : repairedInput(rc, history);
  const turns: Turns = { rc, history, models, queuedBefore, firstTurn, repairs: 0 };
  // A continued run whose journal holds the next turn's response goes on from that response's tool calls.
  const first$ = resume
    ? resumeTurn$(rc, history, resume)
    : continued?.pending === true
      ? continuedTurn$(turns)
      : turn$(turns, rc.turn + 1);
  return expandOn<Outcome, typeof NEXT_TURN, Turns>(first$, NEXT_TURN, nextTurn$, turns);
}

/** The turn after the run's current one. */
function nextTurn$(turns: Turns): Observable<Decision> {
  return turn$(turns, turns.rc.turn + 1);
}

/** The outcome of a run whose loop failed with `error`, with the usage its failed attempts were billed for. */
function failedOutcome(error: unknown, models: ModelCalls): Outcome {
  const billed = models.takeBilled();
  if (isInstance(error, SessionFailure)) {
    const failure = error as SessionFailure;
    return { kind: 'failed', stopReason: failure.stopReason, error: failure.error, billed };
  }
  return { kind: 'failed', stopReason: stopReasonOf(error), error, billed };
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
