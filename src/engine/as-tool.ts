import { Observable, type Subscription } from 'rxjs';
import { z } from 'zod';
import { RunCancelledError, RunFailedError, ToolExecutionError } from '../errors.js';
import { isTerminalEvent, type RunEvent } from '../events.js';
import type { Item } from '../items.js';
import type { JsonSchema } from '../model/types.js';
import { tool, type Tool, type ToolContext } from '../tools/tool.js';
import { createRun } from './create-run.js';
import { callCancelOf } from './running-calls.js';
import { registerSubAgent, type ParentRun, type SubAgentRun } from './sub-agents.js';
import type { Agent, AsToolOptions, RunOptions, SubRunOptions } from './types.js';

const DEFAULT_PARAMETERS = z.object({ input: z.string().describe('The task for the agent') });

function defaultInput(args: unknown): string {
  const input = (args as { input?: unknown } | null)?.input;
  return typeof input === 'string' ? input : JSON.stringify(args);
}

/**
 * `agent.asTool(options)` (see `Agent.asTool`): a tool whose every call is a sub-run of `agent`
 * (guarantee 12: sub-runs on a child token). A run that calls it passes itself as the parent,
 * so the sub-run's events are relayed and its usage summed; called outside a run it relays nothing.
 */
export function agentAsTool<A, C>(agent: Agent<C>, options: AsToolOptions<A, C>): Tool<A, string, C> {
  const toInput = options.input ?? defaultInput;
  const subRun: SubAgentRun = (args, ctx, parent) =>
    subRun$(agent, options.name, toInput(args as A), ctx, options.runOptions, parent);
  const definition: Tool<A, string, C> = {
    name: options.name,
    description: options.description,
    parameters: (options.parameters ?? DEFAULT_PARAMETERS) as z.ZodType<A> | JsonSchema,
    ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}),
    execute: (args, ctx) => subRun(args, ctx, undefined),
  };
  const made = (tool as unknown as (t: Tool<A, string, C>) => Tool<A, string, C>)(definition);
  registerSubAgent(made, subRun);
  return made;
}

/** Why a sub-run stops when its tool call is torn down without a cancel (e.g. the call's `timeoutMs`). */
const ABANDONED = Object.freeze({ type: 'abandoned' as const });

/** One sub-run as a cold Observable of its final output, on a child of the parent run's token. */
function subRun$<C>(
  agent: Agent<C>,
  name: string,
  input: string | readonly Item[],
  ctx: ToolContext<C>,
  runOptions: SubRunOptions<C> | undefined,
  parent: ParentRun | undefined,
): Observable<string> {
  return new Observable<string>((subscriber) => {
    const token = ctx.cancel.child();
    let ended = false;
    const onEvent = (event: RunEvent): void => {
      if (parent !== undefined) {
        if (event.type === 'subrun_event') parent.relay(event.path, event.event);
        else parent.relay(NO_PATH, event);
      }
      if (!isTerminalEvent(event)) return;
      ended = true;
      if (event.type === 'run_completed') {
        // Suspended for approval under a root that suspends: the parent suspends after its batch.
        if (event.suspended !== undefined && parent !== undefined) parent.suspended(event.suspended);
        else subscriber.next(event.output);
        subscriber.complete();
      } else if (event.type === 'run_cancelled') {
        const cause = new RunCancelledError({ ...event });
        subscriber.error(new ToolExecutionError(name, ctx.callId, `sub-run cancelled: ${cause.message}`, { cause }));
      } else {
        const cause = new RunFailedError({ ...event });
        const message = `sub-run failed (${event.stopReason}): ${event.error.message}`;
        subscriber.error(new ToolExecutionError(name, ctx.callId, message, { cause }));
      }
    };
    let sub: Subscription;
    try {
      const options = { ...definedOnly(parent?.inherited), ...runOptions, context: ctx.context } as RunOptions<C>;
      const link = { runId: ctx.runId, callId: ctx.callId };
      const internals = parent
        ? {
            token,
            wrap: parent.wrap,
            parent: link,
            adoptApprovals: parent.adoptApprovals,
            rootSuspends: parent.rootSuspends,
            ...(parent.resume !== undefined ? { resume: parent.resume } : {}),
          }
        : { token };
      // A resumed sub-run goes on from its suspension's Items (its run resumes in its suspended turn).
      const from = parent?.resume !== undefined ? parent.resume.suspended.items : input;
      sub = createRun(agent, from, options, internals).subscribe({ next: onEvent });
    } catch (err) {
      token.dispose();
      subscriber.error(err);
      return;
    }
    return () => {
      // Torn down mid-run (the parent cancelled, or the call's deadline expired): the child is cancelled on its own
      // token first, so its cleanup runs now, inner first, and its run_cancelled (with its usage) reaches the parent.
      // A call cancelled on its own (cancelToolCall) cancels the sub-run with that call's reason.
      const own = callCancelOf(ctx);
      if (!ended) token.cancel(ctx.cancel.isCancelled ? ctx.cancel.reason : own ? own.reason : ABANDONED);
      sub.unsubscribe();
      token.dispose();
    };
  });
}

const NO_PATH: readonly string[] = Object.freeze([]);

/** The inherited options that are set (an unset one must not hide the sub-run's default). */
function definedOnly<T extends object>(options: T | undefined): Partial<T> {
  if (options === undefined) return {};
  return Object.fromEntries(Object.entries(options).filter(([, v]) => v !== undefined)) as Partial<T>;
}
