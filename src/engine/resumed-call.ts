import { EMPTY, Observable, concatMap } from 'rxjs';
import { stage } from '../cancel/stage.js';
import { describeValue } from '../describe.js';
import { ToolCallAlreadyStartedError, serializeError } from '../errors.js';
import { toLastValue } from '../last-value.js';
import type { Session } from '../session/session.js';
import type { Runnable } from './approval.js';
import type { RunContext } from './run-context.js';
import { SessionFailure } from './session-failure.js';
import { toolCall$ } from './tool-call.js';
import { errorResult } from './tool-result.js';

/**
 * The starts recorded in this process, for runs whose session cannot record them (no session, or one
 * without `recordCallStart`): keyed by `[suspensionId, callId]` as the stores key them. Only this
 * process knows them (docs/run-control.md, "Exactly once across resumes").
 */
const startedHere = new Set<string>();

/**
 * A call of the suspended batch started by a resumed run (docs/run-control.md, "Exactly once across
 * resumes"): its start is recorded first, keyed by `(suspensionId, callId)`, in the run's session
 * (`Session.recordCallStart`) or else in this process; the run waits at `tool_call` meanwhile (a
 * cancel lands there; a record already sent may still store, and the call then counts as started; a
 * cancel in the same frame as a later answer wins: the call does not start).
 * The first record runs the call (`ctx.resumed` set); a refused one (an earlier resume started it)
 * does not: the call's `tool_call_failed` carries a {@link ToolCallAlreadyStartedError}, its result
 * Item is marked `interrupted`. A record that throws, rejects or answers anything but a boolean fails
 * the run `session_error` and the call never runs (it fails closed).
 */
export function resumedCall$(
  rc: RunContext<any>,
  r: Runnable & Required<Pick<Runnable, 'resumed'>>,
): Observable<never> {
  const { suspensionId } = r.resumed;
  return new Observable<never>((subscriber) => {
    // The run waits at tool_call from the record until the call's own wait begins (or it is refused).
    const waiting = rc.waits.enter('tool_call');
    subscriber.add(waiting);
    let answered = false;
    const call$ = (): Observable<never> => {
      waiting.unsubscribe(); // toolCall$ enters its own at once
      return toolCall$(rc, r.call, r.tool, r.args, r.resumed);
    };
    const record = recordStart$(rc.opts.session, suspensionId, r.call.callId, () => (answered = true));
    const run$ = record.pipe(
      concatMap((first) => {
        if (!first) {
          waiting.unsubscribe();
          return alreadyStarted(rc, r, suspensionId);
        }
        // An answer that came later than the call's own start stage takes one more: a cancel in the
        // same frame as the store's answer wins, whichever came first (the call stays recorded).
        return answered ? stage(rc.token, call$, rc.hopScheduler) : call$();
      }),
    );
    subscriber.add(run$.subscribe(subscriber));
  });
}

/**
 * The record's answer (true: this start is the first); `later` is called when the answer did not come
 * while the record was being subscribed (a store that answers later). A session without
 * `recordCallStart` (or none) records in this process.
 */
export function recordStart$(
  session: Session | undefined,
  suspensionId: string,
  callId: string,
  later: () => void,
): Observable<boolean> {
  return new Observable<boolean>((subscriber) => {
    if (session === undefined || typeof session.recordCallStart !== 'function') {
      const key = JSON.stringify([suspensionId, callId]);
      const first = !startedHere.has(key);
      startedHere.add(key);
      subscriber.next(first);
      subscriber.complete();
      return;
    }
    let subscribing = true;
    const failed = (error: unknown): void => subscriber.error(new SessionFailure('session_error', error));
    let answer$: Observable<unknown>;
    try {
      answer$ = toLastValue(session.recordCallStart(suspensionId, callId));
    } catch (error) {
      return failed(error);
    }
    let answer: unknown;
    subscriber.add(
      answer$.subscribe({
        next: (value) => void (answer = value),
        error: failed,
        complete: () => {
          if (typeof answer !== 'boolean') {
            const why = `session.recordCallStart() must give true or false, got ${describeValue(answer)}`;
            return failed(new TypeError(why));
          }
          if (!subscribing) later();
          subscriber.next(answer);
          subscriber.complete();
        },
      }),
    );
    subscribing = false;
  });
}

/** The call an earlier resume started: not run again; the model reads that its effects are unknown. */
function alreadyStarted(rc: RunContext<any>, r: Runnable, suspensionId: string): Observable<never> {
  const { callId, name } = r.call;
  const error = new ToolCallAlreadyStartedError(name, callId, suspensionId);
  const result = { ...errorResult(callId, error.message), interrupted: true };
  rc.emit({ type: 'tool_call_failed', callId, name, error: serializeError(error), interrupted: false }, { result });
  return EMPTY;
}
