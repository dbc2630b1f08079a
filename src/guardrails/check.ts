import { Observable, from, take } from 'rxjs';
import { isObservableTotal, isThenable, readProp } from '../describe.js';
import { TimeoutError, serializeError } from '../errors.js';
import type { GuardrailKind, GuardrailTripped } from '../events.js';
import type { RunContext } from '../engine/run-context.js';
import type { AssistantItem } from '../items.js';
import { GuardrailTrippedError } from './error.js';
import {
  DEFAULT_GUARDRAIL_TIMEOUT_MS,
  type GuardrailBase,
  type GuardrailContext,
  type GuardrailReturn,
} from './types.js';

/** How one guardrail judged: passed, or tripped with the error that ends the run (or refuses the call). */
export type Judged = { readonly tripped: false } | { readonly tripped: true; readonly error: GuardrailTrippedError };

const PASSED: Judged = Object.freeze({ tripped: false });

/** One check to run: the guardrail, what it checks, and how its events describe it. */
export interface CheckSpec<S> {
  readonly guardrail: GuardrailBase & { check(subject: S, ctx: GuardrailContext<any>): GuardrailReturn };
  readonly kind: GuardrailKind;
  readonly mode: 'before' | 'parallel' | 'after' | 'hold';
  readonly subject: S;
  readonly callId?: string;
  /** What a trip does (`guardrail_tripped.action`). Default `'end_run'`. */
  readonly action?: GuardrailTripped['action'];
  /** `guardrail_tripped.retracted`: the answer checked was streamed already. */
  readonly retracted?: boolean;
  /** `action: 'refuse_answer'`: the text of the assistant Item that replaces the answer (the trip's fact). */
  readonly refusal?: string;
}

/**
 * One guardrail's check as a cold Observable (docs/guardrails.md): `guardrail_started` on subscribe, the check
 * called with a context whose `signal` aborts on unsubscribe or at `timeoutMs` (a timer on the run's scheduler),
 * then `guardrail_passed` or `guardrail_tripped` and one {@link Judged}, emitted synchronously in the callback
 * where the verdict arrived (so a trip ends the run before anything else hears of it). A check that throws,
 * rejects, errors, ends empty, returns a malformed verdict or passes its deadline counts as `onError` says
 * (default `'trip'`: fail closed). Unsubscribing abandons the check: its Observable is unsubscribed, its
 * signal aborted, a late verdict ignored.
 */
export function check$<S>(rc: RunContext<any>, spec: CheckSpec<S>): Observable<Judged> {
  return new Observable<Judged>((subscriber) => {
    const { guardrail, kind, callId } = spec;
    const { name } = guardrail;
    const where = callId === undefined ? { name, kind } : { name, kind, callId };
    const controller = new AbortController();
    subscriber.add(() => controller.abort(new Error(`guardrail ${name} abandoned`)));
    rc.emit({ type: 'guardrail_started', ...where, mode: spec.mode });
    let settled = false;
    const judge = (tripwire: boolean, output: unknown, error?: unknown): void => {
      if (settled || subscriber.closed) return;
      settled = true;
      if (!tripwire) {
        rc.emit({ type: 'guardrail_passed', ...where });
        subscriber.next(PASSED);
        subscriber.complete();
        return;
      }
      const action = spec.action ?? 'end_run';
      const tripped: Parameters<RunContext['emit']>[0] = {
        type: 'guardrail_tripped',
        ...where,
        action,
        ...(output !== undefined ? { output } : {}),
        ...(error !== undefined ? { error: serializeError(error) } : {}),
        ...(spec.retracted ? { retracted: true } : {}),
      };
      const { refusal } = spec;
      rc.emit(tripped, refusal === undefined ? undefined : { refusal: refusalItem(rc.nextId(), refusal) });
      const err = new GuardrailTrippedError(name, kind, output, error === undefined ? undefined : { cause: error });
      subscriber.next({ tripped: true, error: err });
      subscriber.complete();
    };
    const failed = (error: unknown): void => {
      if (guardrail.onError === 'pass') judge(false, undefined);
      else judge(true, undefined, error);
    };
    const timeoutMs = guardrail.timeoutMs ?? DEFAULT_GUARDRAIL_TIMEOUT_MS;
    if (timeoutMs !== false) {
      subscriber.add(
        rc.scheduler.schedule(() => {
          const error = new TimeoutError('guardrail', timeoutMs);
          controller.abort(error);
          failed(error);
        }, timeoutMs),
      );
    }
    const { runId, turn, token: cancel } = rc;
    const ctx: GuardrailContext<any> = {
      runId,
      agent: rc.agent.name,
      turn,
      guardrail: name,
      kind,
      signal: controller.signal,
      cancel,
      context: rc.opts.context,
    };
    let ret: GuardrailReturn;
    try {
      ret = guardrail.check(spec.subject, ctx);
    } catch (err) {
      failed(err);
      return;
    }
    let seen = false;
    subscriber.add(
      firstValue(ret).subscribe({
        next: (verdict) => {
          seen = true;
          const tripwire = readProp(verdict, 'tripwire');
          if (typeof tripwire !== 'boolean') {
            failed(new TypeError(`guardrail ${name} returned no verdict ({ tripwire: boolean, output? })`));
            return;
          }
          judge(tripwire, readProp(verdict, 'output'));
        },
        error: failed,
        complete: () => {
          if (!seen) failed(new TypeError(`guardrail ${name} ended without a verdict`));
        },
      }),
    );
  });
}

/** The assistant Item that replaces an answer refused by an output guardrail with `onTrip: 'refuse'`. */
function refusalItem(id: string, text: string): AssistantItem {
  return { type: 'assistant', id, text, toolCalls: [] };
}

/** A check's verdict as an Observable: a value, a Promise's, or an Observable's first (later ones are ignored). */
function firstValue(ret: GuardrailReturn): Observable<unknown> {
  if (isObservableTotal(ret)) return ret.pipe(take(1));
  if (isThenable(ret)) return from(ret as PromiseLike<unknown>);
  return from([ret]);
}
