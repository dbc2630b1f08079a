import { Observable } from 'rxjs';
import type { ToolCall } from '../items.js';
import type { ApprovalDecision } from './suspended.js';

/**
 * How a call's approval wait ended ("approvals", docs/run-control.md): approved; rejected (with the
 * reason the model reads); expired (`deadlines.approvalMs` passed, `ms`); or cancelled on its own
 * (`cancelToolCall`, with its reason; `delivered` when its `tool_call_failed` went out at the cancel,
 * before the call's wait began).
 */
export type Verdict =
  | { readonly kind: 'approved' }
  | { readonly kind: 'rejected'; readonly reason: string }
  | { readonly kind: 'expired'; readonly ms: number }
  | { readonly kind: 'cancelled'; readonly reason: unknown; readonly delivered?: boolean };

interface Entry {
  readonly call: ToolCall;
  verdict: Verdict | undefined;
  listener: ((verdict: Verdict) => void) | undefined;
}

const APPROVED: Verdict = Object.freeze({ kind: 'approved' });

/** A decision as a {@link Verdict}. */
export function verdictOf(decision: ApprovalDecision): Verdict {
  return decision.approve ? APPROVED : { kind: 'rejected', reason: decision.reason };
}

/**
 * One run's calls awaiting approval (the run makes it; `RunControl` reaches it). A call is opened
 * before its `tool_approval_requested` is delivered, so a decision given from that event's handler
 * counts; it is settled once, by the first of `approve` / `reject` / the deadline / `cancel`; later
 * ones answer false. Closed when the run ends: every later decision answers false.
 */
export class Approvals {
  /** Made at the first `open`: a run that never asks for an approval holds none (BENCHMARKS.md, memory). */
  #entries: Map<string, Entry> | undefined;
  readonly #deliverCancel: ((call: ToolCall, reason: unknown) => void) | undefined;
  #closed = false;

  /**
   * `deliverCancel`: emits the `tool_call_failed` of a call cancelled before its wait began (a later
   * call of a sequential batch), so it is out before `cancelToolCall()` returns in that case too.
   */
  constructor(deliverCancel?: (call: ToolCall, reason: unknown) => void) {
    this.#deliverCancel = deliverCancel;
  }

  /** Opens `call`'s wait (or, for a resumed run, records the decision it already has). */
  open(call: ToolCall, verdict?: Verdict): void {
    if (this.#closed) return;
    (this.#entries ??= new Map()).set(call.callId, { call, verdict, listener: undefined });
  }

  /** True while `callId` awaits a decision. */
  isAwaiting(callId: string): boolean {
    const entry = this.#entries?.get(callId);
    return entry !== undefined && entry.verdict === undefined;
  }

  /**
   * Settles `callId`'s wait with `verdict`. True if the call was awaiting a decision (the verdict
   * took effect), false for an unknown call, one settled already, or a run that has ended.
   */
  settle(callId: string, verdict: Verdict): boolean {
    const entry = this.#entries?.get(callId);
    if (this.#closed || entry === undefined || entry.verdict !== undefined) return false;
    entry.verdict = verdict;
    const listener = entry.listener;
    entry.listener = undefined;
    listener?.(verdict);
    return true;
  }

  /** `approve()` / `reject()`: {@link settle} with the decision. */
  decide(callId: string, decision: ApprovalDecision): boolean {
    return this.settle(callId, verdictOf(decision));
  }

  /**
   * `cancelToolCall(callId, reason)` for a call awaiting approval: settles it as cancelled (its
   * `tool_call_failed` is `ToolCallCancelledError`, `interrupted: true`). True if it was awaiting.
   */
  cancel(callId: string, reason: unknown): boolean {
    const entry = this.#entries?.get(callId);
    if (this.#closed || entry === undefined || entry.verdict !== undefined) return false;
    const deliver = this.#deliverCancel;
    if (entry.listener !== undefined || deliver === undefined) {
      return this.settle(callId, { kind: 'cancelled', reason });
    }
    // Nobody waits on it yet: its tool_call_failed goes out now; its wait, when it begins, emits nothing.
    entry.verdict = { kind: 'cancelled', reason, delivered: true };
    deliver(entry.call, reason);
    return true;
  }

  /** The verdict of `callId`, once: at once when it is settled already, else when it is. */
  verdict$(callId: string): Observable<Verdict> {
    return new Observable<Verdict>((subscriber) => {
      const entry = this.#entries?.get(callId);
      if (entry === undefined) return subscriber.error(new Error(`no approval is open for call ${callId}`));
      const deliver = (verdict: Verdict): void => {
        subscriber.next(verdict);
        subscriber.complete();
      };
      if (entry.verdict !== undefined) return deliver(entry.verdict);
      entry.listener = deliver;
      return () => {
        if (entry.listener === deliver) entry.listener = undefined;
      };
    });
  }

  /** The calls still awaiting a decision, in the order they were opened. */
  awaiting(): ToolCall[] {
    const out: ToolCall[] = [];
    if (this.#entries === undefined) return out;
    for (const entry of this.#entries.values()) if (entry.verdict === undefined) out.push(entry.call);
    return out;
  }

  /** The decisions given so far for calls that awaited one (approved or rejected only). */
  decisions(): Record<string, ApprovalDecision> {
    const out: Record<string, ApprovalDecision> = {};
    for (const [callId, { verdict }] of this.#entries ?? []) {
      if (verdict?.kind === 'approved') out[callId] = { approve: true };
      else if (verdict?.kind === 'rejected') out[callId] = { approve: false, reason: verdict.reason };
    }
    return out;
  }

  /** The run ended: nothing awaits any more; every later decision answers false. */
  close(): void {
    this.#closed = true;
    this.#entries?.clear();
  }
}
