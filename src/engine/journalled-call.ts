import { EMPTY, Observable, concatMap, of } from 'rxjs';
import { stage } from '../cancel/stage.js';
import { ToolCallOutcomeUnknownError, serializeError } from '../errors.js';
import type { Runnable } from './approval.js';
import { recordStart$ } from './resumed-call.js';
import type { RunContext } from './run-context.js';
import { toolCall$ } from './tool-call.js';
import { errorResult } from './tool-result.js';

/** True when the run records each call's start in its session, keyed by `(runId, callId)`: a journalling one. */
export function recordsStarts(rc: RunContext<any>): boolean {
  return rc.journal.active && typeof rc.opts.session?.recordCallStart === 'function';
}

/**
 * A call of a run whose session keeps a journal (docs/sessions.md, "No tool runs twice"): its start is
 * recorded first with `Session.recordCallStart(runId, callId)`, while the run waits at `tool_call` (a
 * cancel lands there), so that a continued run (`resumeRun`) knows it started. The first record runs the
 * call (`ctx.attempt` 1). A refused one means the call started in the process that ran the run before it
 * died, and its result was not journalled: a tool declared `idempotent` runs it again with the same call
 * id and `ctx.attempt` n, the first n ≥ 2 whose re-run start ({@link attemptKey}) it records first — so
 * every continue counts, a third one gives 3; any other gets a `tool_call_failed` with a
 * {@link ToolCallOutcomeUnknownError}, its result Item marked `interrupted`, and does not run. A record that
 * fails fails the run `session_error` and the call never runs (as `resumedCall$`).
 */
export function journalledCall$(rc: RunContext<any>, r: Runnable): Observable<never> {
  return new Observable<never>((subscriber) => {
    const waiting = rc.waits.enter('tool_call');
    subscriber.add(waiting);
    let answered = false;
    const call$ = (attempt: number) => (): Observable<never> => {
      waiting.unsubscribe(); // toolCall$ enters its own at once
      return toolCall$(rc, r.call, r.tool, r.args, undefined, attempt);
    };
    const record = (attempt: number) =>
      recordStart$(rc.opts.session, rc.runId, attemptKey(r.call.callId, attempt), () => (answered = true));
    // The attempt this start is: the first whose record stores (only an idempotent tool's re-runs are recorded).
    const attempt$ = (attempt: number): Observable<number | undefined> =>
      record(attempt).pipe(
        concatMap((first) => {
          if (first) return of(attempt);
          return r.tool.idempotent === true ? attempt$(attempt + 1) : of(undefined);
        }),
      );
    const run$ = attempt$(1).pipe(
      concatMap((attempt) => {
        if (attempt === undefined) {
          waiting.unsubscribe();
          return outcomeUnknown(rc, r);
        }
        const run = call$(attempt);
        // An answer later than the call's start stage takes one more: a cancel in the same frame wins.
        return answered ? stage(rc.token, run, rc.hopScheduler) : run();
      }),
    );
    subscriber.add(run$.subscribe(subscriber));
  });
}

/**
 * The call id a start of `callId` is recorded under: `callId` itself for its first attempt, `<callId>#attempt-<n>`
 * for the re-run n ≥ 2 of an idempotent tool's call (one record per continue that re-ran it).
 */
export function attemptKey(callId: string, attempt: number): string {
  return attempt === 1 ? callId : `${callId}#attempt-${attempt}`;
}

/** The call that started in the process that died: not run again; the model reads that its effects are unknown. */
function outcomeUnknown(rc: RunContext<any>, r: Runnable): Observable<never> {
  const { callId, name } = r.call;
  const error = new ToolCallOutcomeUnknownError(name, callId, rc.runId);
  const result = { ...errorResult(callId, error.message), interrupted: true };
  rc.emit({ type: 'tool_call_failed', callId, name, error: serializeError(error), interrupted: false }, { result });
  return EMPTY;
}
