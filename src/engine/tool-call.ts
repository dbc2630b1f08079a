import { Observable, Subscriber, defer, throwError, timeout, type Unsubscribable } from 'rxjs';
import { describeValue, isObservableTotal } from '../describe.js';
import { TimeoutError, ToolCallCancelledError, ToolExecutionError, serializeError } from '../errors.js';
import type { RunEvent } from '../events.js';
import type { ToolCall, ToolResultItem } from '../items.js';
import { bindMcpWrap } from '../tools/call-wrap.js';
import type { Tool, ToolContext, ToolReturn } from '../tools/tool.js';
import { guardTool$ } from '../guardrails/tool.js';
import { optionalDeadline } from './deadlines.js';
import { callHooks$, hasHooks } from './hooks.js';
import type { RunContext } from './run-context.js';
import { markCallCancelled, type CancellableCall } from './running-calls.js';
import { subAgentOf, type ParentRun } from './sub-agents.js';
import { emptyResultError, errorResult, outputText, toolResult$ } from './tool-result.js';

/** Why a tool's signal aborts when the run drops it without a cancel (it never does today; kept for safety). */
const ABANDONED = Object.freeze({ type: 'abandoned' as const });
const NOT_ABORTED = Symbol('not aborted');

/**
 * A tool call's context (the tool author's contract in docs/cancellation.md). Its AbortController
 * is made when a tool first reads `signal` (most tools never do); an abort before that is kept and
 * applied then. Unsubscribed with the call: if the call had not settled, its signal aborts with the
 * cancel reason (guarantee 11: cleanup starts inner to outer).
 */
class CallContext implements ToolContext, Unsubscribable {
  readonly cancel: ToolContext['cancel'];
  readonly mailbox: ToolContext['mailbox'];
  readonly runId: string;
  readonly callId: string;
  readonly turn: number;
  readonly context: unknown;
  /** Set only for a resumed call (an own property then, absent otherwise). */
  declare readonly resumed?: { readonly suspensionId: string };
  readonly attempt: number;
  settled = false;
  /** The call as the run's running calls hold it, once registered: it leaves them when torn down unsettled. */
  registered: CancellableCall | undefined;
  #controller: AbortController | undefined;
  #reason: unknown = NOT_ABORTED;
  #report: ((progress: unknown) => void) | undefined;

  constructor(
    private readonly rc: RunContext<any>,
    private readonly call: ToolCall,
    resumed: { readonly suspensionId: string } | undefined,
    attempt: number,
  ) {
    this.attempt = attempt;
    if (resumed !== undefined) this.resumed = Object.freeze({ suspensionId: resumed.suspensionId });
    this.cancel = rc.token;
    this.mailbox = rc.mailbox;
    this.runId = rc.runId;
    this.callId = call.callId;
    this.turn = rc.turn;
    this.context = rc.opts.context;
    const mcp = rc.internals.wrap?.mcp;
    if (mcp !== undefined) bindMcpWrap(this, mcp); // an MCP tool's request runs inside it
  }

  get signal(): AbortSignal {
    if (this.#controller === undefined) {
      this.#controller = new AbortController();
      if (this.#reason !== NOT_ABORTED) this.#controller.abort(this.#reason);
    }
    return this.#controller.signal;
  }

  /** Emits `tool_call_progress` while the call runs (a bound function: it may be destructured). */
  get reportProgress(): (progress: unknown) => void {
    return (this.#report ??= (progress) => {
      if (this.settled) return;
      const { callId, name } = this.call;
      this.rc.emit({ type: 'tool_call_progress', callId, name, progress });
    });
  }

  abort(reason: unknown): void {
    if (this.#reason !== NOT_ABORTED) return;
    this.#reason = reason;
    this.#controller?.abort(reason);
  }

  unsubscribe(): void {
    if (this.settled) return;
    this.settled = true;
    this.abort(this.rc.token.isCancelled ? this.rc.token.reason : ABANDONED);
    if (this.registered !== undefined) this.rc.calls.remove(this.callId, this.registered);
  }
}

/**
 * One tool call (checkpoint 8: tool call): the run waits at `tool_call` while it executes. Emits
 * `tool_call_started`, runs the tool (a sub-agent tool as a sub-run of this run), then records and
 * emits its result (`tool_call_completed` or `tool_call_failed`, the result Item riding with it),
 * then runs `afterToolCall`. A cancel tears it down: the tool is abandoned (never awaited, a late
 * result or rejection ignored) and its `ctx.signal` aborts with the cancel reason. The per-tool
 * timeout aborts `ctx.signal` with a `TimeoutError` and becomes a tool error for the model, not a cancel.
 * While it executes the call can be cancelled on its own (`RunControl.cancelToolCall`): `ctx.signal`
 * aborts with a `ToolCallCancelledError`, the tool is abandoned, and `tool_call_failed { interrupted: true }`
 * is emitted at once; the batch and the run go on. `resumed`: the suspension a resumed run continues, for a
 * call of its suspended batch (`ctx.resumed`; its start was recorded by `resumedCall$`). `attempt`: `ctx.attempt`
 * (2 for an idempotent call a continued run runs again: `journalledCall$`).
 */
export function toolCall$(
  rc: RunContext<any>,
  call: ToolCall,
  tool: Tool,
  args: unknown,
  resumed?: { readonly suspensionId: string },
  attempt = 1,
): Observable<never> {
  return new Observable<never>((subscriber) => {
    const running = rc.waits.enter('tool_call');
    subscriber.add(running);
    const ctx = new CallContext(rc, call, resumed, attempt);
    // Added before the tool runs: a tool that cancels its own run synchronously (ctx.cancel inside
    // execute) still gets its signal aborted before the run's terminal.
    subscriber.add(ctx);
    const run = new CallRun(rc, call, tool, subscriber, ctx, running);
    // Per-call cancel (docs/run-control.md): the call is settled as cancelled at once, its tool abandoned
    // (signal aborted, Observable unsubscribed, a sub-run cancelled on its own token with `reason`), so its
    // tool_call_failed is out before cancelToolCall() returns, whatever the tool does with its signal. The call
    // leaves when it settles, or when torn down unsettled, just after its signal aborted (`CallContext`).
    rc.calls.add(call.callId, (ctx.registered = run));
    rc.emit({ type: 'tool_call_started', callId: call.callId, name: call.name, arguments: call.arguments });
    // A cancel of the run, or of this call, in its handler: the tool never runs.
    if (subscriber.closed || run.cancelled) return;
    runTool(rc, call, tool, args, ctx, run);
    run.subscribed = true;
    if (run.cancelled)
      run.unsubscribe(); // cancelled while it was being subscribed
    else subscriber.add(run);
  });
}

/** One running call: the subscriber of its tool's value, and how it settles (one object for the call's state). */
class CallRun extends Subscriber<unknown> implements CancellableCall {
  cancelled = false;
  /** The tool's value was subscribed (a cancel while subscribing unsubscribes it afterwards). */
  subscribed = false;

  constructor(
    private readonly rc: RunContext<any>,
    private readonly call: ToolCall,
    private readonly tool: Tool,
    private readonly out: Subscriber<never>,
    private readonly ctx: CallContext,
    private readonly running: Unsubscribable,
  ) {
    super();
  }

  /** Set when `run` subscribes a plain tool's Observable itself: its last value is the result (`toolResult$`). */
  takesLast = false;
  #seen = false;
  #last: unknown;

  protected override _next(value: unknown): void {
    if (!this.takesLast) return this.#result(value);
    this.#seen = true;
    this.#last = value;
  }

  #result(value: unknown): void {
    const { call, tool } = this;
    const text = outputText(value);
    const { callId } = call;
    if (text.ok) return this.settle({ type: 'tool_result', callId, output: text.text, isError: false }, undefined);
    // Never "[object Object]" or a function's source: the model is told why there is no result.
    const why = `the result of tool ${tool.name} cannot be sent to the model: ${text.reason}`;
    const error = new ToolExecutionError(tool.name, call.callId, why);
    this.settle(errorResult(call.callId, why), error);
  }

  protected override _error(err: unknown): void {
    try {
      this.settle(errorResult(this.call.callId, describeValue(err, 'thrown value')), err);
    } finally {
      this.unsubscribe();
    }
  }

  // Only a sub-run that suspended ends without a value: the call stays open, its run suspends after the batch.
  protected override _complete(): void {
    if (this.takesLast) {
      // As `toolResult$`'s last value: the result, then the completion below; none, a tool error.
      if (!this.#seen) return this._error(emptyResultError(this.tool.name, this.call.callId));
      const last = this.#last;
      this.#last = undefined;
      this.#result(last);
    }
    try {
      const { ctx } = this;
      if (ctx.settled || !this.rc.nested.has(this.call.callId)) return;
      ctx.settled = true;
      this.running.unsubscribe();
      this.rc.calls.remove(this.call.callId, this);
      this.out.complete();
    } finally {
      this.unsubscribe();
    }
  }

  /** `RunControl.cancelToolCall()` on this call; false once it settled. */
  cancel(reason: unknown): boolean {
    const { ctx, call } = this;
    if (ctx.settled) return false;
    this.cancelled = true;
    const error = new ToolCallCancelledError(call.name, call.callId, reason);
    markCallCancelled(ctx, reason);
    ctx.abort(error);
    if (this.subscribed) this.unsubscribe();
    this.settle({ ...errorResult(call.callId, error.message), interrupted: true }, error, true);
    return true;
  }

  settle(item: ToolResultItem, error: unknown, interrupted = false): void {
    const { rc, call, out } = this;
    // A call settles once: what its tool gives after it settled (a per-call cancel made while the tool was being
    // subscribed, e.g. from a handler of the progress it reported then) is ignored, as a late result is.
    if (this.ctx.settled) return;
    this.ctx.settled = true;
    this.running.unsubscribe(); // the call is over: a cancel from here on is seen where the batch now waits
    this.rc.calls.remove(call.callId, this);
    const { callId, name } = call;
    const fact = { result: item };
    const failed = item.isError ? serializeError(error) : undefined;
    // interrupted is set only by a per-call cancel: its outcome is typed 'cancelled'.
    if (failed) {
      const event = { type: 'tool_call_failed', callId, name, error: failed, interrupted } as const;
      rc.emit(interrupted ? { ...event, outcome: 'cancelled' } : event, fact);
    } else rc.emit({ type: 'tool_call_completed', callId, name, output: item.output }, fact);
    if (out.closed) return;
    if (!hasHooks(rc, 'afterToolCall')) return out.complete();
    out.add(
      callHooks$(rc, 'afterToolCall', { call, result: item }).subscribe({
        error: (err) => out.error(err),
        complete: () => out.complete(),
      }),
    );
  }
}

/**
 * Subscribes `run` to what the tool gives ({@link value$}). A plain call (no sub-agent, no tool wrapper, no deadline,
 * no tool guardrails) runs the tool here, as `value$`'s `defer` would, and `run` takes an Observable's last value
 * itself (as `toolResult$` does, without its subscriber: BENCHMARKS.md, section 6.1).
 */
function runTool(rc: RunContext<any>, call: ToolCall, tool: Tool, args: unknown, ctx: CallContext, run: CallRun): void {
  const guarded = (rc.agent.guardrails?.tool?.length ?? 0) > 0;
  const timed = (tool.timeoutMs ?? optionalDeadline(rc.opts.deadlines?.toolMs)) !== undefined;
  if (guarded || timed || subAgentOf(tool) !== undefined || rc.internals.wrap?.tool !== undefined) {
    value$(rc, call, tool, args, ctx).subscribe(run);
    return;
  }
  let ret: ToolReturn<unknown>;
  try {
    ret = tool.execute(args, ctx);
  } catch (err) {
    return run.error(err);
  }
  if (!isObservableTotal(ret)) return void toolResult$(tool.name, call.callId, ret).subscribe(run);
  run.takesLast = true;
  ret.subscribe(run);
}

/** What the tool gives: its one result value, under its deadline, inside the run's tool wrapper. */
function value$(rc: RunContext<any>, call: ToolCall, tool: Tool, args: unknown, ctx: CallContext): Observable<unknown> {
  const sub = subAgentOf(tool);
  const wrap = rc.internals.wrap?.tool;
  let out$ = defer(() => {
    if (sub !== undefined) return sub(args, ctx, parentRun(rc, call));
    return toolResult$(tool.name, call.callId, tool.execute(args, ctx));
  });
  if (wrap !== undefined) {
    const inner$ = out$;
    out$ = new Observable<unknown>((subscriber) => wrap(call, () => inner$.subscribe(subscriber)));
  }
  const timeoutMs = tool.timeoutMs ?? optionalDeadline(rc.opts.deadlines?.toolMs);
  // The tool guardrails check around the call, outside its deadline (docs/guardrails.md, "Tool guardrails").
  if (timeoutMs === undefined) return guardTool$(rc, call, args, out$);
  const timed$ = out$.pipe(
    timeout({
      first: timeoutMs,
      scheduler: rc.scheduler,
      with: () => {
        const err = new TimeoutError('tool', timeoutMs, `tool ${tool.name} timed out after ${timeoutMs} ms`);
        ctx.abort(err);
        return throwError(() => err);
      },
    }),
  );
  return guardTool$(rc, call, args, timed$);
}

/** This run as the parent of a sub-agent call: its events relayed with the tool's name first in `path`. */
function parentRun(rc: RunContext<any>, call: ToolCall): ParentRun {
  const { scheduler, idGenerator, random, telemetry } = rc.opts;
  return {
    relay: (path: readonly string[], event: RunEvent) => {
      const full = [call.name];
      for (const name of path) full.push(name);
      rc.emit({ type: 'subrun_event', path: full, event });
    },
    inherited: { scheduler, idGenerator, random, telemetry },
    wrap: rc.internals.wrap,
    adoptApprovals: (approvals) => rc.adoptApprovals(approvals),
    suspended: (suspended) => rc.suspendNested(call.callId, suspended),
    resume: rc.internals.resume?.nested.get(call.callId),
    // Only the root's mode counts (a sub-run's own `approvals: 'suspend'` fails its own calls closed).
    rootSuspends:
      rc.internals.parent === undefined ? rc.opts.approvals === 'suspend' : rc.internals.rootSuspends === true,
  };
}
