import { Observable, type Subscription } from 'rxjs';
import { z } from 'zod';
import { RunCancelledError, RunFailedError, ToolExecutionError } from '../errors.js';
import type { RunEvent } from '../events.js';
import type { Item } from '../items.js';
import type { JsonSchema } from '../model/types.js';
import { tool, type Tool, type ToolContext } from '../tools/tool.js';
import { OWNED_TOKEN, SUBRUN_CHANNEL, type SubrunChannel } from './internal.js';
import { run } from './run.js';
import type { Agent, RunOptions } from './types.js';

/** The sub-run options an agent-as-tool may fix (the rest belong to the sub-run itself: token, mailbox, history). */
export type SubRunOptions<C = unknown> = Pick<RunOptions<C>, 'hooks' | 'retry' | 'deadlines' | 'stream' | 'scheduler' | 'idGenerator' | 'random'>;

/** Options of `agent.asTool()` / {@link agentAsTool}. */
export interface AsToolOptions<A = { input: string }, C = unknown> {
  /** The tool name the parent's model sees (`^[a-zA-Z0-9_-]{1,64}$`). */
  readonly name: string;
  readonly description: string;
  /** The arguments' schema (zod or raw JSON Schema). Default `z.object({ input: z.string() })`. */
  readonly parameters?: z.ZodType<A> | JsonSchema;
  /** The sub-run's input from the arguments. Default: `args.input` when it is a string, else the arguments as JSON. */
  readonly input?: (args: A) => string | readonly Item[];
  /** Per-call deadline in ms (a tool error for the parent's model; the sub-run is torn down). */
  readonly timeoutMs?: number;
  readonly runOptions?: SubRunOptions<C>;
}

const DEFAULT_PARAMETERS = z.object({ input: z.string().describe('The task for the agent') });

function defaultInput(args: unknown): string {
  const input = (args as { input?: unknown } | null)?.input;
  return typeof input === 'string' ? input : JSON.stringify(args);
}

/**
 * An agent as a tool (guarantee 12: sub-runs on a child token): each call is a sub-run of
 * `agent` with its own mailbox and history, on a CHILD token of the parent
 * run's token (`ctx.cancel.child()`), owned by the sub-run so its re-arm
 * never touches the parent's. The tool emits the sub-run's final output.
 *
 * - The parent's cancel stops the tree: the parent tears the call down, and
 *   the child is cancelled with the parent's reason, then unsubscribed (its
 *   cleanup starts first: guarantee 11: cleanup starts inner to outer).
 * - A child that cancels itself (its own `ctx.cancel`) ends the call with a
 *   `ToolExecutionError` "sub-run cancelled: …" (cause: `RunCancelledError`),
 *   a tool error for the parent's model; the parent goes on. A failed child
 *   gives "sub-run failed (…)" (cause: `RunFailedError`).
 * - Every child event reaches the parent as `subrun_event` with path
 *   `[name, …]` (nested sub-runs flattened: the path grows, the innermost
 *   event is kept); the child's usage is summed into the parent's.
 * - The child token detaches when the sub-run ends.
 *
 * @example
 * const researcher = defineAgent({ name: 'researcher', instructions: '…', model });
 * const lead = defineAgent({ name: 'lead', instructions: '…', model,
 *   tools: [researcher.asTool({ name: 'research', description: 'Researches a question' })] });
 */
export function agentAsTool<A = { input: string }, C = unknown>(agent: Agent<C>, options: AsToolOptions<A, C>): Tool<A, string, C> {
  const toInput = options.input ?? defaultInput;
  const definition: Tool<A, string, C> = {
    name: options.name,
    description: options.description,
    parameters: (options.parameters ?? DEFAULT_PARAMETERS) as z.ZodType<A> | JsonSchema,
    ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}),
    execute: (args, ctx) => subRun$(agent, options.name, toInput(args), ctx, options.runOptions),
  };
  return (tool as unknown as (t: Tool<A, string, C>) => Tool<A, string, C>)(definition);
}

/** Why a sub-run stops when its tool call is torn down without a cancel (e.g. the call's `timeoutMs`). */
const ABANDONED = Object.freeze({ type: 'abandoned' as const });

/** One sub-run as a cold Observable of its final output (see {@link agentAsTool}). */
function subRun$<C>(agent: Agent<C>, name: string, input: string | readonly Item[], ctx: ToolContext<C>, runOptions?: SubRunOptions<C>): Observable<string> {
  return new Observable<string>((subscriber) => {
    const channel = (ctx as unknown as { [SUBRUN_CHANNEL]?: SubrunChannel })[SUBRUN_CHANNEL];
    const token = ctx.cancel.child();
    let ended = false;
    const onEvent = (event: RunEvent): void => {
      if (event.type === 'subrun_event') channel?.emit(event.path, event.event);
      else channel?.emit([], event);
      if (event.type !== 'run_completed' && event.type !== 'run_cancelled' && event.type !== 'run_failed') return;
      ended = true;
      channel?.addUsage(event.usage);
      if (event.type === 'run_completed') {
        subscriber.next(event.output);
        subscriber.complete();
      } else if (event.type === 'run_cancelled') {
        const cause = new RunCancelledError({ ...event });
        subscriber.error(new ToolExecutionError(name, ctx.callId, `sub-run cancelled: ${cause.message}`, { cause }));
      } else {
        const cause = new RunFailedError({ ...event });
        subscriber.error(new ToolExecutionError(name, ctx.callId, `sub-run failed (${event.stopReason}): ${event.error.message}`, { cause }));
      }
    };
    let sub: Subscription;
    try {
      const inherited = Object.fromEntries(Object.entries(channel?.inherited ?? {}).filter(([, v]) => v !== undefined));
      const options = { ...inherited, ...runOptions, context: ctx.context, [OWNED_TOKEN]: token } as RunOptions<C>;
      sub = run(agent, input, options).subscribe({ next: onEvent });
    } catch (err) {
      token.dispose();
      subscriber.error(err);
      return;
    }
    return () => {
      // Torn down mid-run (the parent cancelled, or the call's deadline expired): the child is cancelled on its own
      // token first, so its cleanup runs now, inner first, and its run_cancelled (with its usage) reaches the parent.
      if (!ended) token.cancel(ctx.cancel.isCancelled ? ctx.cancel.reason : ABANDONED);
      sub.unsubscribe();
      token.dispose();
    };
  });
}
