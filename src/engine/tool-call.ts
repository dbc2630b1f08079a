import {
  EmptyError, Observable, catchError, concat, concatMap, defer, from, ignoreElements, last, map, of, throwError,
  timeout, type MonoTypeOperatorFunction,
} from 'rxjs';
import { z } from 'zod';
import { describeValue, isObservableTotal, isThenable, toJsonText, type JsonTextResult } from '../describe.js';
import { TimeoutError, ToolExecutionError, serializeError } from '../errors.js';
import type { CancelPhase } from '../events.js';
import { addUsage, type ToolCall, type ToolResultItem } from '../items.js';
import { SUBRUN_CHANNEL, type SubrunChannel } from './internal.js';
import { isZodSchema, type Tool, type ToolContext, type ToolReturn } from '../tools/tool.js';
import { optionalDeadline } from './deadlines.js';
import { callHooks$ } from './hooks.js';
import type { RunController, Step } from './run-controller.js';

/** Why a tool's signal aborts when the run drops it without a cancel (it never does today; kept for safety). */
const ABANDONED = Object.freeze({ type: 'abandoned' as const });

/** A tool's return as an Observable of its result: the last value; an empty Observable is a tool error. */
function toolResult$(name: string, callId: string, ret: ToolReturn<unknown>): Observable<unknown> {
  if (isObservableTotal(ret))
    return ret.pipe(
      last(),
      catchError((err) => throwError(() => (err instanceof EmptyError ? new ToolExecutionError(name, callId, `tool ${name} returned an empty Observable`) : err))),
    );
  if (isThenable(ret)) return from(ret);
  return from([ret]); // not of(): it would probe the value as a scheduler
}

/**
 * The text the model sees for a tool's value: strings as they are, `undefined` as '', anything else as
 * faithful JSON text (cycles marked, BigInt as decimal strings, Map/Set as arrays: `toJsonText`).
 * Not ok, with the reason, for a value that has no text form (a function, a symbol, an unreadable value).
 */
export function outputText(value: unknown): JsonTextResult {
  if (typeof value === 'string') return { ok: true, text: value };
  if (value === undefined) return { ok: true, text: '' };
  return toJsonText(value);
}

export function errorResult(callId: string, message: string): ToolResultItem {
  return { type: 'tool_result', callId, output: `Error: ${message}`, isError: true };
}

/**
 * Parses and validates a call's arguments ("unusable output is a tool
 * error", never a crash). Empty arguments mean `{}`.
 */
export function parseArguments(tool: Tool, call: ToolCall): { ok: true; args: unknown } | { ok: false; message: string } {
  let parsed: unknown;
  try {
    parsed = call.arguments.trim() === '' ? {} : JSON.parse(call.arguments);
  } catch (err) {
    return { ok: false, message: `the arguments of ${tool.name} are not valid JSON (${(err as Error).message}): ${call.arguments.slice(0, 200)}` };
  }
  if (isZodSchema(tool.parameters)) {
    const result = tool.parameters.safeParse(parsed);
    if (!result.success) return { ok: false, message: `invalid arguments for ${tool.name}:\n${z.prettifyError(result.error)}` };
    return { ok: true, args: result.data };
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed))
    return { ok: false, message: `the arguments of ${tool.name} must be a JSON object` };
  return { ok: true, args: parsed };
}

/**
 * Where a batch waits, as the run's `phase` (the phase says where a cancel
 * was observed: docs/cancellation.md). A parallel batch waits on several
 * things at once, so
 * the phase is derived from counts: `tool_call` while any call executes, else
 * `hook` while an `afterToolCall` hook is awaited, else the boundary before
 * the next call (`between_tools` / `wave_boundary`) while calls are queued,
 * else `turn_entry` (the batch is over; the next stage is the next turn).
 */
export class BatchPhase {
  running = 0;
  hooks = 0;
  constructor(
    private readonly rc: RunController<any>,
    private readonly boundary: 'between_tools' | 'wave_boundary',
    /** Calls not started yet. */
    public queued: number,
  ) {}

  /** The phase now; {@link update} also sets it on the run. */
  current(): CancelPhase {
    if (this.running > 0) return 'tool_call';
    if (this.hooks > 0) return 'hook';
    return this.queued > 0 ? this.boundary : 'turn_entry';
  }

  update(): void {
    this.rc.phase = this.current();
  }

  /** `enter` for {@link callHooks$}: phase `hook` while the hook runs (unless a call executes), then back. */
  enterHook(): () => void {
    this.hooks++;
    this.update();
    return () => {
      this.hooks--;
      this.update();
    };
  }
}

/**
 * Like `finalize`, but the callback is registered before the source is
 * subscribed, so an unsubscribe that happens during a synchronous subscribe
 * (a re-entrant cancel) runs it at once rather than after the fact.
 */
function teardownFirst<T>(callback: () => void): MonoTypeOperatorFunction<T> {
  return (source) =>
    new Observable<T>((subscriber) => {
      subscriber.add(callback);
      source.subscribe(subscriber);
    });
}

/**
 * One tool call (checkpoint 8: tool call): emits `tool_call_started`, runs the
 * tool with its own AbortController, and records and emits the result, then
 * runs `afterToolCall`. A cancel tears it down: the tool is abandoned (never
 * awaited, a late result or rejection ignored) and its `ctx.signal` aborts
 * with the cancel reason. The per-tool timeout aborts `ctx.signal` with a
 * `TimeoutError` and becomes a tool error for the model, not a cancel.
 */
export function toolCall$(rc: RunController<any>, call: ToolCall, tool: Tool, args: unknown, batch = new BatchPhase(rc, 'between_tools', 1)): Observable<Step> {
  return defer(() => {
    batch.queued--;
    batch.running++;
    batch.update();
    const controller = new AbortController();
    let settled = false;
    const ctx: ToolContext = {
      signal: controller.signal,
      cancel: rc.token,
      mailbox: rc.mailbox,
      runId: rc.runId,
      callId: call.callId,
      turn: rc.turn,
      context: rc.opts.context,
      reportProgress: (progress) => {
        if (!settled) rc.emit({ type: 'tool_call_progress', callId: call.callId, name: call.name, progress });
      },
    };
    const channel: SubrunChannel = {
      emit: (path, event) => rc.emit({ type: 'subrun_event', path: [call.name, ...path], event }),
      addUsage: (usage) => (rc.usage = addUsage(rc.usage, usage)),
      inherited: { scheduler: rc.opts.scheduler, idGenerator: rc.opts.idGenerator, random: rc.opts.random },
    };
    Object.defineProperty(ctx, SUBRUN_CHANNEL, { value: channel });
    const timeoutMs = tool.timeoutMs ?? optionalDeadline(rc.opts.deadlines?.toolMs);
    let value$ = defer(() => toolResult$(tool.name, call.callId, tool.execute(args, ctx)));
    if (timeoutMs !== undefined)
      value$ = value$.pipe(
        timeout({
          first: timeoutMs,
          scheduler: rc.scheduler,
          with: () => {
            const err = new TimeoutError('tool', timeoutMs, `tool ${tool.name} timed out after ${timeoutMs} ms`);
            controller.abort(err);
            return throwError(() => err);
          },
        }),
      );
    const run$ = value$.pipe(
      map((value): ToolResultItem => {
        const text = outputText(value);
        if (text.ok) return { type: 'tool_result', callId: call.callId, output: text.text, isError: false };
        // Never "[object Object]" or a function's source: the model is told why there is no result.
        const why = `the result of tool ${tool.name} cannot be sent to the model: ${text.reason}`;
        throw new ToolExecutionError(tool.name, call.callId, why);
      }),
      catchError((err) => of({ ...errorResult(call.callId, describeValue(err, 'thrown value')), error: err })),
      concatMap((result) => {
        settled = true;
        // The call is over: a cancel from here on is seen where the batch now waits (a sibling, a hook, the boundary after it).
        batch.running--;
        batch.update();
        const { error, ...item } = result as ToolResultItem & { error?: unknown };
        rc.scratch.addResult(item);
        const event: Step = item.isError
          ? { type: 'tool_call_failed', callId: call.callId, name: call.name, error: serializeError(error), interrupted: false }
          : { type: 'tool_call_completed', callId: call.callId, name: call.name, output: item.output };
        const after$ = callHooks$(rc.hookSets, 'afterToolCall', () => rc.hookContext({ call, result: item }), () => batch.enterHook());
        return concat(of(event), after$.pipe(ignoreElements()));
      }),
      // Registered before the tool is subscribed: a tool that cancels its own run synchronously
      // (ctx.cancel inside execute) still gets its signal aborted before the run's terminal
      // (guarantee 11: cleanup starts inner to outer).
      teardownFirst(() => {
        if (settled) return;
        batch.running--;
        controller.abort(rc.token.isCancelled ? rc.token.reason : ABANDONED);
      }),
    );
    return concat(
      of<Step>({ type: 'tool_call_started', callId: call.callId, name: call.name, arguments: call.arguments }),
      defer(() => (rc.decided ? [] : run$)),
    );
  });
}
