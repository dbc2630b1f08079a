import { EMPTY, Observable, type Subscriber, concat, concatMap, defer, from, mergeMap, of } from 'rxjs';
import { stage } from '../cancel/stage.js';
import { describeValue, readProp } from '../describe.js';
import { HookError, UnknownToolError, serializeError } from '../errors.js';
import type { ToolCall } from '../items.js';
import type { Tool } from '../tools/tool.js';
import { approval$, requestApprovals$, type Runnable } from './approval.js';
import { callHooks$, hasHooks } from './hooks.js';
import { refusedFor } from './repair.js';
import { journalledCall$, recordsStarts } from './journalled-call.js';
import { resumedCall$ } from './resumed-call.js';
import type { RunContext } from './run-context.js';
import { notRun, stopsBeforeCall } from './stop.js';
import { EachInTurn, concatEach } from './sequence.js';
import { toolCall$ } from './tool-call.js';
import type { Wait } from './waits.js';
import { errorResult, parseArguments } from './tool-result.js';

const tools = new WeakMap<readonly Tool[], ReadonlyMap<string, Tool>>();

/** An agent's tools by name, built once per agent (its tool list is frozen). */
function toolsByName(list: readonly Tool[]): ReadonlyMap<string, Tool> {
  let out = tools.get(list);
  if (!out) tools.set(list, (out = new Map(list.map((t) => [t.name, t] as const))));
  return out;
}

/**
 * Prepares the tool calls of one model response (checkpoint 10: dispatch), in call order: each
 * call's arguments are validated (an unknown tool or bad arguments become a tool error for the
 * model) and every `beforeToolCall` hook runs (a deny becomes a tool error; a malformed verdict
 * fails the run), all before any tool starts (guarantee 2: nothing starts after a cancel). Then each
 * call that may run is asked its tool's `needsApproval` ("approvals", `approval.ts`). Emits the calls
 * that may run, as one array, those awaiting approval marked.
 */
export function prepare$(rc: RunContext<any>, calls: readonly ToolCall[]): Observable<readonly Runnable[]> {
  return defer(() => {
    const runnables: Runnable[] = [];
    const byName = toolsByName(rc.agent.tools);
    const hooked = hasHooks(rc, 'beforeToolCall');
    const prepared$ = from(calls).pipe(
      concatMap((call): Observable<never> => {
        // Unusable arguments or a duplicate id, found when the response was recorded: never run
        // ("the history is valid on the wire").
        const refused = refusedFor(call);
        if (refused) return refuse(rc, call, refused.name, refused.message);
        const tool = byName.get(call.name);
        if (!tool) return refuseUnknown(rc, call, [...byName.keys()]);
        const parsed = parseArguments(tool, call);
        if (!parsed.ok) return refuse(rc, call, 'InvalidArgumentsError', parsed.message);
        if (stopsBeforeCall(rc)) return notRun(rc, call); // no hook for a call that will not run ("Stop")
        if (!hooked) {
          runnables.push({ call, tool, args: parsed.args });
          return EMPTY;
        }
        let denied: string | undefined;
        return concat(
          callHooks$(rc, 'beforeToolCall', { call }, true).pipe(
            concatMap((verdict) => {
              const reason = denialOf(verdict); // a malformed verdict errors here: the batch never starts
              if (denied === undefined) denied = reason;
              return EMPTY;
            }),
          ),
          defer(() => {
            if (denied !== undefined) return refuse(rc, call, 'ToolCallDenied', `the call was denied: ${denied}`);
            runnables.push({ call, tool, args: parsed.args });
            return EMPTY;
          }),
        );
      }),
    );
    return concat(
      prepared$,
      defer(() => requestApprovals$(rc, runnables)),
    );
  });
}

/**
 * Runs a prepared batch (checkpoint 6: between tools; checkpoint 7: wave boundary; checkpoint 8:
 * tool call): sequentially, or in a pool of `maxConcurrency`. Each start is a stage (one hop, then
 * a poll). The batch waits at its boundary (`between_tools` / `wave_boundary`) while any of its
 * calls is queued, that is not started yet; while a call executes the run waits at `tool_call`.
 * Results enter the history in call order when the turn completes; on cancel, finished calls keep
 * their results and the rest are paired as interrupted in `partial`. A call awaiting approval waits
 * at `approval` first (`approval$`), outside the pool: one pending approval does not hold up the
 * other calls of a parallel batch; a call not approved never takes a slot. Under a graceful stop at
 * `tool_call_end` a call whose start comes is paired with "not run: the run was stopped" instead
 * (also an approved call whose approval was pending when the stop came: "Stop and approvals").
 */
export function batch$(rc: RunContext<any>, runnables: readonly Runnable[]): Observable<never> {
  if (runnables.length === 0) return EMPTY;
  const parallel = rc.agent.parallelToolCalls;
  if (!parallel) return new Observable<never>((out) => new SequentialBatch(rc, runnables, out).start());
  return new Observable<never>((subscriber) => {
    const boundary = rc.waits.enter('wave_boundary');
    subscriber.add(boundary);
    let queued = runnables.length;
    const dequeue = (): void => {
      if (--queued === 0) boundary.unsubscribe();
    };
    const start = (r: Runnable): Observable<never> => stage(rc.token, () => begin(rc, r, dequeue), rc.hopScheduler);
    // A call not approved leaves the queue when its tool_call_failed is out.
    const approved = (r: Runnable): Observable<Runnable> =>
      r.approval ? approval$(rc, r).pipe(tapEnd(r, dequeue)) : of(r);
    from(runnables).pipe(mergeMap(approved), mergeMap(start, parallel.maxConcurrency)).subscribe(subscriber);
  });
}

/** A call's start, one hop after its turn came (a stage): it leaves the queue, then runs (or is paired "not run"). */
function begin(rc: RunContext<any>, r: Runnable, dequeue: () => void): Observable<never> {
  dequeue();
  // A graceful stop at tool_call_end: no further call starts; each is paired "not run" ("Stop").
  if (stopsBeforeCall(rc)) return notRun(rc, r.call);
  // A call of a suspended batch: its start is recorded first ("Exactly once across resumes").
  if (r.resumed !== undefined) return resumedCall$(rc, { ...r, resumed: r.resumed });
  // A journalling run records each start, so that a continue does not run it twice ("No tool runs twice").
  if (recordsStarts(rc)) return journalledCall$(rc, r);
  return toolCall$(rc, r.call, r.tool, r.args);
}

/**
 * A sequential batch, hand-written (BENCHMARKS.md, section 6.1): `from(runnables).pipe(concatEach(project))` with
 * the batch's boundary wait, its queue count and the calls' starts as fields of one object ({@link EachInTurn})
 * instead of closures, a `concatEach` level and two Observables; one {@link Forward} per live call.
 */
class SequentialBatch extends EachInTurn<Runnable, never> {
  readonly #boundary: Wait;
  /** The calls not started yet (a call leaves the queue at its start, or when it is not approved). */
  #queued: number;

  constructor(
    private readonly rc: RunContext<any>,
    runnables: readonly Runnable[],
    out: Subscriber<never>,
  ) {
    super(out, runnables);
    this.#queued = runnables.length;
    this.#boundary = rc.waits.enter('between_tools');
  }

  override start(): void {
    this.out.add(this.#boundary);
    super.start();
  }

  /** A call: after its approval, if it awaits one; then its start, one hop later (a stage). */
  protected project(r: Runnable): Observable<never> {
    if (!r.approval) return this.#start(r);
    return approval$(this.rc, r).pipe(
      tapEnd(r, () => this.#dequeue()),
      concatEach((a: Runnable) => this.#start(a)),
    );
  }

  #start(r: Runnable): Observable<never> {
    return stage(this.rc.token, () => begin(this.rc, r, () => this.#dequeue()), this.rc.hopScheduler);
  }

  #dequeue(): void {
    if (--this.#queued === 0) this.#boundary.unsubscribe();
  }
}

/** Calls `onRefused` when the approval wait completed without approving `r` (it emitted nothing). */
function tapEnd(r: Runnable, onRefused: () => void) {
  return (source: Observable<Runnable>): Observable<Runnable> =>
    new Observable<Runnable>((subscriber) => {
      let approved = false;
      return source.subscribe({
        next: (value) => {
          approved = true;
          subscriber.next(value);
        },
        error: (err) => subscriber.error(err),
        complete: () => {
          if (!approved && r.approval) onRefused();
          subscriber.complete();
        },
      });
    });
}

/** A call that never runs: its error result rides with its `tool_call_failed`. */
function refuse(rc: RunContext<any>, call: ToolCall, name: string, message: string): Observable<never> {
  const { callId } = call;
  const fact = { result: errorResult(callId, message) };
  rc.emit({ type: 'tool_call_failed', callId, name: call.name, error: { name, message }, interrupted: false }, fact);
  return EMPTY;
}

/** A call to a tool the agent does not have ("unusable output is a tool error"): an {@link UnknownToolError}. */
function refuseUnknown(rc: RunContext<any>, call: ToolCall, available: readonly string[]): Observable<never> {
  const error = new UnknownToolError(call.name, call.callId, available);
  const { callId } = call;
  const fact = { result: errorResult(callId, error.message) };
  const failed = serializeError(error);
  rc.emit({ type: 'tool_call_failed', callId, name: call.name, error: failed, interrupted: false }, fact);
  return EMPTY;
}

const UNREADABLE = Symbol('unreadable');

/**
 * A `beforeToolCall` verdict; a security hook fails closed. `undefined` or `null` allows (returns
 * `undefined`). An object with a truthy `deny` denies: returns the reason the model reads (`true` →
 * "denied by beforeToolCall", an Error → its message, anything else described totally). Any other
 * value (`{ deny: false }` included) throws a {@link HookError}: the run fails and no tool of the batch runs.
 */
function denialOf(verdict: unknown): string | undefined {
  if (verdict === undefined || verdict === null) return undefined;
  const deny = typeof verdict === 'object' ? readProp(verdict, 'deny', UNREADABLE) : undefined;
  if (deny !== UNREADABLE && deny) {
    return deny === true ? 'denied by beforeToolCall' : describeValue(deny, 'deny reason');
  }
  const shown = typeof verdict === 'string' ? JSON.stringify(verdict) : describeValue(verdict);
  const why =
    `it returned ${shown}, which is neither undefined (allow) nor { deny: reason } (deny); ` +
    'return undefined to allow the call';
  throw new HookError('beforeToolCall', new TypeError(why));
}
