import { EMPTY, Observable, concat, concatMap, defer, from, of, type Subscription } from 'rxjs';
import { stage } from '../cancel/stage.js';
import type { Verdict } from '../control/approvals.js';
import { describeValue, isThenable } from '../describe.js';
import {
  ToolApprovalExpiredError,
  ToolApprovalUnavailableError,
  ToolCallCancelledError,
  ToolCallRejectedError,
  ToolExecutionError,
  serializeError,
} from '../errors.js';
import type { ToolCall } from '../items.js';
import { isFrontendTool } from '../tools/frontend-tool.js';
import type { ApprovalContext, Tool } from '../tools/tool.js';
import { approvalDeadline } from './deadlines.js';
import type { RunContext } from './run-context.js';
import { errorResult } from './tool-result.js';

/**
 * A call of a batch that may run: its tool, parsed arguments, whether it waits for approval first, and
 * `resumed`: the suspension a resumed run continues, for a call of the suspended batch (its start is
 * recorded before it runs: `resumed-call.ts`).
 */
export interface Runnable {
  readonly call: ToolCall;
  readonly tool: Tool;
  readonly args: unknown;
  readonly approval?: boolean;
  readonly resumed?: { readonly suspensionId: string };
}

/**
 * "Approvals" (docs/run-control.md), the step after every `beforeToolCall` hook of the batch: for each
 * call that may run, in call order, its tool's `needsApproval` is asked (a Promise is awaited while
 * the run waits at `dispatch`); a call that needs approval is opened in the run's approvals, then its
 * `tool_approval_requested` is emitted (so a decision from that event's handler counts). A
 * `needsApproval` that throws or rejects refuses the call with a tool error (it fails closed).
 * Emits the runnables, each marked with `approval`.
 */
export function requestApprovals$(
  rc: RunContext<any>,
  runnables: readonly Runnable[],
): Observable<readonly Runnable[]> {
  // A front-end tool's call asks nothing: it suspends the run (suspend.ts), answered by the client.
  const asks = (r: Runnable): boolean =>
    !isFrontendTool(r.tool) && r.tool.needsApproval !== undefined && r.tool.needsApproval !== false;
  if (!runnables.some(asks)) return of(runnables);
  return defer(() => {
    const out: Runnable[] = [];
    const asked$ = from(runnables).pipe(
      concatMap((r) =>
        needsApproval$(rc, r).pipe(
          concatMap((needs): Observable<never> => {
            if (needs instanceof Error) return refuseCall(rc, r.call, serializeError(needs), needs.message);
            if (!needs) {
              out.push(r);
              return EMPTY;
            }
            if (cannotWait(rc)) {
              const error = new ToolApprovalUnavailableError(r.tool.name, r.call.callId);
              return refuseCall(rc, r.call, serializeError(error), error.message);
            }
            out.push({ ...r, approval: true });
            rc.approvals.open(r.call);
            const { callId, name, arguments: args } = r.call;
            rc.emit({ type: 'tool_approval_requested', callId, name, arguments: args });
            return EMPTY;
          }),
        ),
      ),
    );
    return concat(
      asked$,
      defer(() => of(out)),
    );
  });
}

/**
 * A sub-run that cannot wait for a decision ("Nested approvals", docs/run-control.md): it was given
 * `approvals: 'suspend'` itself under a root that waits (its suspension would reach no one who resumes it).
 * Under a root that suspends, a sub-run suspends with it.
 */
function cannotWait(rc: RunContext<any>): boolean {
  const { parent, rootSuspends } = rc.internals;
  return parent !== undefined && rootSuspends !== true && rc.opts.approvals === 'suspend';
}

/** The tool's `needsApproval` answer for this call: a boolean (anything but `false` asks), or the Error it threw. */
function needsApproval$(rc: RunContext<any>, r: Runnable): Observable<boolean | Error> {
  const needs = isFrontendTool(r.tool) ? false : r.tool.needsApproval;
  if (needs === undefined || typeof needs === 'boolean') return of(needs === true);
  return defer(() => {
    const failed = (err: unknown): Error => {
      const why = `needsApproval of tool ${r.tool.name} failed: ${describeValue(err, 'thrown value')}`;
      return new ToolExecutionError(r.tool.name, r.call.callId, why, { cause: err });
    };
    let answer: unknown;
    try {
      answer = needs(r.args, approvalContext(rc, r.call));
    } catch (err) {
      return of(failed(err));
    }
    if (!isThenable(answer)) return of(answer !== false);
    return new Observable<boolean | Error>((subscriber) => {
      (answer as PromiseLike<unknown>).then(
        (value) => subscriber.closed || (subscriber.next(value !== false), subscriber.complete()),
        (err) => subscriber.closed || (subscriber.next(failed(err)), subscriber.complete()),
      );
    });
  });
}

function approvalContext(rc: RunContext<any>, call: ToolCall): ApprovalContext<any> {
  const { runId, turn, token: cancel, mailbox } = rc;
  return { runId, callId: call.callId, turn, cancel, mailbox, context: rc.opts.context };
}

/**
 * A call's approval wait (checkpoint 13: approval): the run waits at `approval` from here until the
 * verdict's stage starts. The verdict is the first of `approve` / `reject` / `cancelToolCall` on the
 * run's control, or `deadlines.approvalMs` passing (a timer on the run's scheduler: it rejects the
 * call). A decision or the deadline then takes one stage ("cancel wins at a stage start": a cancel in
 * the same frame wins, whichever came first). A per-call cancel takes none: like a running call's
 * ("Per-call cancel", docs/run-control.md), its `tool_call_failed { interrupted: true }` is delivered
 * before `cancelToolCall()` returns. Emits the runnable when approved; a rejection, expiry or per-call
 * cancel emits the call's `tool_call_failed` (its error result rides with it) and nothing.
 */
export function approval$(rc: RunContext<any>, r: Runnable): Observable<Runnable> {
  return new Observable<Runnable>((subscriber) => {
    subscriber.add(rc.waits.enter('approval'));
    const { callId } = r.call;
    const ms = approvalDeadline(rc.opts.deadlines);
    let deadline: Subscription | undefined;
    if (ms !== undefined) {
      const expire = (): void => void rc.approvals.settle(callId, { kind: 'expired', ms });
      deadline = rc.scheduler.schedule(expire, ms);
      subscriber.add(deadline);
    }
    const decided$ = rc.approvals.verdict$(callId).pipe(
      concatMap((verdict) => {
        // The deadline is moot once a verdict is in: cleared now, not in the teardown that follows this wait's
        // completion. A per-call cancel given before the wait began completes it synchronously, and when it was
        // the batch's last call that completion ends the run: its timer must be gone before the terminal
        // (guarantee 11: nothing of the run left when its terminal event is out).
        deadline?.unsubscribe();
        if (verdict.kind === 'cancelled') {
          if (!verdict.delivered) emitCancelled(rc, r.call, verdict.reason);
          return EMPTY;
        }
        const decided = (): Runnable[] | Observable<never> =>
          verdict.kind === 'approved' ? [r] : refuseVerdict(rc, r, verdict);
        return stage(rc.token, decided, rc.hopScheduler);
      }),
    );
    decided$.subscribe(subscriber);
  });
}

/**
 * The `tool_call_failed` of a call cancelled while it awaited approval (`cancelToolCall`): error
 * `ToolCallCancelledError` (the model reads "cancelled by the user: <reason>"), `interrupted: true`, the
 * same as for a running call cancelled on its own.
 */
export function emitCancelled(rc: RunContext<any>, call: ToolCall, reason: unknown): void {
  const error = new ToolCallCancelledError(call.name, call.callId, reason);
  const result = { ...errorResult(call.callId, error.message), interrupted: true };
  const { callId, name } = call;
  const failed = { type: 'tool_call_failed', callId, name, error: serializeError(error), interrupted: true } as const;
  rc.emit({ ...failed, outcome: 'cancelled' }, { result });
}

/**
 * The `tool_call_failed` of a call that was rejected (`ToolCallRejectedError`, `outcome: 'rejected'`) or
 * whose wait expired (`ToolApprovalExpiredError`, `outcome: 'expired'`).
 */
function refuseVerdict(
  rc: RunContext<any>,
  r: Runnable,
  verdict: Exclude<Verdict, { kind: 'approved' | 'cancelled' }>,
): Observable<never> {
  const { call } = r;
  const error =
    verdict.kind === 'rejected'
      ? new ToolCallRejectedError(call.name, call.callId, verdict.reason)
      : new ToolApprovalExpiredError(call.name, call.callId, verdict.ms);
  return refuseCall(rc, call, serializeError(error), error.message, verdict.kind);
}

/** A call that never runs: its error result rides with its `tool_call_failed`. */
function refuseCall(
  rc: RunContext<any>,
  call: ToolCall,
  error: ReturnType<typeof serializeError>,
  message: string,
  outcome?: 'rejected' | 'expired',
): Observable<never> {
  const { callId, name } = call;
  const result = errorResult(callId, message);
  const failed = { type: 'tool_call_failed', callId, name, error, interrupted: false } as const;
  rc.emit(outcome === undefined ? failed : { ...failed, outcome }, { result });
  return EMPTY;
}
