import type { FrontendTool } from '../tools/frontend-tool.js';
import type { Guardrails } from '../guardrails/types.js';
import type { Observable, SchedulerLike } from 'rxjs';
import type { z } from 'zod';
import type { CancelSignal } from '../cancel/cancel-signal.js';
import type { RunControl } from '../control/run-control.js';
import type { SuspensionKey } from '../control/seal.js';
import type { Suspended } from '../control/suspended.js';
import type { StopRequest } from '../control/stop.js';
import type { BudgetFigures, Cost, FinishReason, RunEvent, TerminalEvent, Undelivered } from '../events.js';
import type { Item, ToolCall, ToolResultItem, Usage, UserItem } from '../items.js';
import type { Mailbox } from '../mailbox/mailbox.js';
import type { JsonSchema, ModelProvider, ModelRequest, ProviderOptions } from '../model/types.js';
import type { Session } from '../session/session.js';
import type { Tool } from '../tools/tool.js';
import type { TraceCarrier } from '../runs/trace-carrier.js';
import type { Budget } from './budget/options.js';
import type { CompactionPolicy } from './compaction/policy.js';
import type { RequestEstimate } from './budget/meter.js';
import type { RunTelemetry } from './telemetry.js';

/**
 * A hook may return nothing, a value, a Promise or an Observable (its last value counts). Awaited ones
 * race the cancel (checkpoint 11: awaited hook).
 */
export type HookReturn<T> = T | PromiseLike<T> | Observable<T>;

/** What every hook receives. `cancel` is a token the run owns; `mailbox` is the run's mailbox. */
export interface HookContext<C = unknown> {
  readonly runId: string;
  readonly agent: string;
  readonly turn: number;
  readonly cancel: CancelSignal;
  readonly mailbox: Mailbox;
  readonly context: C;
}

/**
 * Lifecycle hooks. A throwing (or rejecting, or erroring)
 * hook fails the run with `run_failed`, except `runEnded`: the outcome
 * stands and its error goes to rxjs `config.onUnhandledError` (by default
 * rethrown in a new task, which ends a Node process like any uncaught error).
 * - `turnStarted`: before the turn's mailbox drain (a push from it lands in this turn).
 * - `prepareRequest`: before each model request (before `beforeModelCall`), with the request the engine built
 *   and the model it goes to; may return {@link RequestChanges} (docs/long-runs.md, "Request shaping"). The
 *   agent's hook runs first, the run's sees its changes. Invalid changes fail the run with a `RequestShapeError`.
 * - `beforeModelCall`: before each model request, with the request (as `prepareRequest` shaped it).
 * - `beforeToolCall`: before each tool call. `undefined` (or `null`) allows it; `{ deny: reason }` with any truthy
 *   `reason` (a string, `true`, an Error, an object) skips the call and the model gets a tool error with the reason
 *   described; any other return (`{ deny: false }` included) is a `HookError` that fails the run before any tool of
 *   the batch starts (a security hook fails closed). All of a batch's `beforeToolCall` hooks run before any of
 *   its tools starts.
 * - `afterToolCall`: after each call, with its result Item.
 * - `runEnded`: synchronous, exactly once per run on every outcome (unsubscribe included), after inner cleanup started
 * and before the terminal event, which it receives.
 */
export interface Hooks<C = unknown> {
  turnStarted?(ctx: HookContext<C>): HookReturn<void>;
  prepareRequest?(ctx: PrepareRequestContext<C>): HookReturn<void | null | RequestChanges>;
  beforeModelCall?(ctx: HookContext<C> & { readonly request: ModelRequest }): HookReturn<void>;
  beforeToolCall?(
    ctx: HookContext<C> & { readonly call: ToolCall },
  ): HookReturn<void | null | { readonly deny: string | true | object }>;
  afterToolCall?(ctx: HookContext<C> & { readonly call: ToolCall; readonly result: ToolResultItem }): HookReturn<void>;
  runEnded?(ctx: HookContext<C> & { readonly outcome: TerminalEvent }): void;
}

/** What a `prepareRequest` hook receives: the run's fields, the request as built so far and its model. */
export interface PrepareRequestContext<C = unknown> extends HookContext<C> {
  /** The request the engine built (or the earlier `prepareRequest` hook shaped): the history, then the run's Items. */
  readonly request: ModelRequest;
  /** The model it goes to (the agent's `model`, or the one an earlier hook chose). */
  readonly model: ModelProvider;
  /**
   * The estimate of `request`'s input tokens for `model`'s family, calibrated against what the run's responses
   * reported, with the model's context window (docs/long-runs.md, "Token accounting"): e.g. leave older turns
   * out past 80 % of `contextWindow`.
   */
  readonly estimate: RequestEstimate;
}

/**
 * What a `prepareRequest` hook may change of the next model request (docs/long-runs.md, "Request shaping");
 * every field is optional and an absent one keeps what the request has. Only `record` changes the run's
 * history; the rest shape this one request.
 * - `items`: the Items sent instead of the request's (e.g. older turns left out). Valid on the wire: every
 *   tool call followed by its one result before the next assistant or user Item, no result without its call,
 *   no call id twice; else a `RequestShapeError` (nothing is sent). Not stored: the next request is built
 *   from the full history again.
 * - `instructions`: the system instructions sent.
 * - `activeTools`: names of the agent's tools offered to the model (a subset, in this order); an unknown name
 *   is a `RequestShapeError`. Dispatch still knows every tool of the agent.
 * - `model`: the provider this request goes to, with the engine's retry and rescue; the agent's
 *   `fallbackModel` and `breaker` stay the agent model's.
 * - `providerOptions`: per-family wire options ({@link ProviderOptions}).
 * - `record`: `user` Items appended to the run's Items (each reported as `user_message_injected`, committed
 *   with the run like steering) and sent at the end of this request.
 */
export interface RequestChanges {
  readonly items?: readonly Item[];
  readonly instructions?: string;
  readonly activeTools?: readonly string[];
  readonly model?: ModelProvider;
  readonly providerOptions?: ProviderOptions;
  readonly record?: readonly UserItem[];
}

/**
 * "Retry transient errors only": exponential backoff with full jitter, capped; `retry-after` honoured
 * up to `maxRetryAfterMs`. An absent field takes its value from `DEFAULTS.retry`.
 */
export interface RetryOptions {
  /** Retries after the first attempt. Default `DEFAULTS.retry.maxRetries` (2). */
  readonly maxRetries?: number;
  /** The first backoff ceiling in ms. Default `DEFAULTS.retry.initialDelayMs` (500). */
  readonly initialDelayMs?: number;
  /** The cap of the jittered backoff in ms (not of a `retry-after`). Default `DEFAULTS.retry.maxDelayMs` (8 000). */
  readonly maxDelayMs?: number;
  /** Growth factor per attempt. Default `DEFAULTS.retry.multiplier` (2). */
  readonly multiplier?: number;
  /**
   * The longest server-requested wait (`retry-after`) honoured, in ms; a longer one fails the model
   * call at once with a non-retryable `ModelCallError` giving the server's time. Default
   * `DEFAULTS.retry.maxRetryAfterMs` (60 000).
   */
  readonly maxRetryAfterMs?: number;
}

/**
 * Deadlines in ms (docs/recovery.md, "Deadlines"). An absent one takes its default from
 * `DEFAULTS.deadlines` (`toolMs` and `runMs` have none: off); `false` turns one off.
 */
export interface Deadlines {
  /** A streamed request, from sending to its first event. A retryable model error. Default 60 000. */
  readonly firstEventMs?: number | false;
  /** A streamed request, the longest silence between two events. A retryable model error. Default 30 000. */
  readonly idleMs?: number | false;
  /**
   * A whole model request: by default (300 000) only non-streamed ones and the rescue; a value the
   * caller sets applies to streamed requests too. A retryable model error.
   */
  readonly requestMs?: number | false;
  /** Default per tool call (a tool's own `timeoutMs` wins). A tool error for the model, not a cancel. Default off. */
  readonly toolMs?: number | false;
  /** The whole run: a cancel with reason `{ type: 'deadline' }`. Default off. */
  readonly runMs?: number | false;
  /** The session write of a completed run; when it passes, `run_failed` (`session_error`). Default 30 000. */
  readonly commitMs?: number | false;
  /**
   * The wait for a decision on a tool call that needs approval (`approvals: 'wait'`); when it passes,
   * the call is rejected (`ToolCallRejectedError`, a tool error for the model). Default 3 600 000.
   */
  readonly approvalMs?: number | false;
}

/**
 * The fallback circuit breaker ("fallback behind a breaker"). One breaker per provider instance.
 * Without a `fallbackModel`, an open breaker holds requests at the stream gate
 * (checkpoint 4: stream gate, phase `stream_gate`) until its cool-down ends.
 */
export interface BreakerOptions {
  /** Consecutive failures that open the breaker. Default `DEFAULTS.breaker.failureThreshold` (3). */
  readonly failureThreshold?: number;
  /** How long it stays open before a half-open probe, in ms. Default `DEFAULTS.breaker.cooldownMs` (30 000). */
  readonly cooldownMs?: number;
}

/**
 * What {@link defineAgent} takes. `C` is the type of `RunOptions.context`; `O` the type of the
 * structured answer (`output`'s output type; `unknown` without one).
 */
export interface AgentDefinition<C = unknown, O = unknown> {
  readonly name: string;
  /** The system instructions. */
  readonly instructions: string;
  readonly model: ModelProvider;
  readonly fallbackModel?: ModelProvider;
  readonly breaker?: BreakerOptions;
  readonly tools?: readonly Tool<any, any, C>[];
  /** Turns before `run_failed` with `stopReason: 'max_turns'`. Default `DEFAULTS.maxTurns` (20). */
  readonly maxTurns?: number;
  /** loopctl's dispatch concurrency (not OpenAI's `parallel_tool_calls`). Default: sequential. */
  readonly parallelToolCalls?: { readonly maxConcurrency: number };
  readonly hooks?: Hooks<C>;
  /**
   * The schema of the final answer (a zod 4 schema; docs/run-control.md, "Structured output"). The
   * answer is parsed as JSON and validated by it; `run_completed.value` and `RunResult.value` carry
   * the result (`output` stays the raw text). A provider is asked for JSON of this schema. Must be
   * synchronous (no async refinements).
   */
  readonly output?: z.ZodType<O>;
  /**
   * Repair turns after an invalid answer: each gives the model the validation error and counts toward
   * `maxTurns`; once they are spent the run fails with `stopReason: 'output_invalid'`. Default 1;
   * only with `output`.
   */
  readonly outputRetries?: number;
  /**
   * The context window of `model` in tokens, overriding loopctl's table (`CONTEXT_WINDOWS`; docs/long-runs.md,
   * "Token accounting"): a positive integer.
   */
  readonly contextWindow?: number;
  /**
   * Compaction of a long history (docs/long-runs.md, "Compaction"): when the next request's estimate passes
   * `threshold` (default 0.8) of the model's context window, or a provider refuses a request as too long (then the
   * request is sent once more), the Items before the latest `keepRecentTurns` turns are replaced by a summary a
   * model writes (`{ threshold?, keepRecentTurns?, model?, instructions?, onFailure? }`) or left out
   * (`{ type: 'truncate' }`). Off without it.
   */
  readonly compaction?: CompactionPolicy;
  /**
   * Checks around the run (docs/guardrails.md): `input` guardrails on the run's input and each turn's steering,
   * `output` guardrails on the final answer. A trip ends the run `run_failed` with `stopReason: 'guardrail'` and a
   * `GuardrailTrippedError`, committing nothing.
   */
  readonly guardrails?: Guardrails<C>;
}

/** A validated, frozen agent. */
export interface Agent<C = unknown, O = unknown> extends AgentDefinition<C, O> {
  readonly tools: readonly Tool<any, any, C>[];
  readonly maxTurns: number;
  /** `DEFAULTS.outputRetries` (1) when not given. */
  readonly outputRetries: number;
  /**
   * This agent as a tool for another agent, the one way to make a sub-agent tool (guarantee 12:
   * sub-runs on a child token): each call is a sub-run of this agent with its own mailbox and
   * history, on a child of the parent run's token, owned by the sub-run (its re-arm never touches
   * the parent's). The tool's result is the sub-run's final output.
   * - The parent's cancel stops the tree: the call is torn down and the sub-run is cancelled with
   *   the parent's reason, its cleanup first (guarantee 11: cleanup starts inner to outer).
   * - A sub-run that cancels itself (its own `ctx.cancel`) ends the call with a
   *   `ToolExecutionError` "sub-run cancelled: …" (cause: `RunCancelledError`), a tool error for the
   *   parent's model; the parent goes on. A failed sub-run gives "sub-run failed (…)" (cause:
   *   `RunFailedError`). One torn down by its `timeoutMs` is cancelled with `{ type: 'abandoned' }`.
   * - Every sub-run event reaches the parent as `subrun_event` with path `[name, …]` (nested
   *   sub-runs flattened: the path grows); the sub-run's usage is summed into the parent's.
   * Throws `ConfigurationError` naming the field for invalid options (e.g. `tool.name`).
   *
   * @example
   * const researcher = defineAgent({ name: 'researcher', instructions: '…', model });
   * const lead = defineAgent({ name: 'lead', instructions: '…', model,
   *   tools: [researcher.asTool({ name: 'research', description: 'Researches a question' })] });
   */
  asTool<A = { input: string }>(options: AsToolOptions<A, C>): Tool<A, string, C>;
}

/** The sub-run options an agent-as-tool may fix (the rest are the sub-run's own: token, mailbox, history). */
export type SubRunOptions<C = unknown> = Pick<
  RunOptions<C>,
  'hooks' | 'retry' | 'deadlines' | 'stream' | 'scheduler' | 'idGenerator' | 'random'
>;

/** Options of `agent.asTool()`. */
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

/**
 * Options of `run()` and `start()`. Invalid ones throw a
 * `ConfigurationError` naming the field before anything runs.
 * Cancel sources: `cancel` (sticky and re-armable), `cancel$` (a hot
 * emission before the run subscribed is not seen; one subscription shared by
 * the live runs given it), `signal` (an aborted AbortSignal cancels every run
 * it is given; one listener shared by the live runs given it).
 */
export interface RunOptions<C = unknown> {
  /**
   * Sticky and re-armable: the run that sees it fire re-arms it before its terminal event
   * (guarantee 5: one cancel, one cancelled run).
   */
  readonly cancel?: CancelSignal;
  /**
   * Its first emission (the value is the reason) cancels the run; its error or completion
   * cancels nothing. A shared source is linked once: the live runs given this same Observable
   * share one subscription, made by the first of them and dropped when the last one ends (or
   * on its first value, error or completion). So a cold `cancel$` starts when the first run
   * using it subscribes and is not restarted for later runs: `timer(5_000)` given to several
   * runs fires 5 s after the first of them started, for every run using it then. A run that
   * starts once it is dropped subscribes afresh; a hot emission before that is not seen.
   */
  readonly cancel$?: Observable<unknown>;
  /**
   * Aborting it cancels the run (reason: `signal.reason`, or `UNREADABLE_REASON` when reading
   * it throws); never aborted by loopctl (guarantee 8: the caller's token is never fired).
   * A shared source is linked once: the live runs given this same signal add one 'abort'
   * listener to it between them, removed when the last of them ends.
   */
  readonly signal?: AbortSignal;
  /** The caller's mailbox; without one the run makes its own, unreachable afterwards (docs/steering.md). */
  readonly mailbox?: Mailbox;
  /** Each string is pushed into the mailbox while the run lives; its error or completion only ends the merging. */
  readonly steer$?: Observable<string>;
  readonly session?: Session;
  /** Run-level hooks, called after the agent's own. */
  readonly hooks?: Hooks<C>;
  /** Retry policy, or `false` for none. */
  readonly retry?: RetryOptions | false;
  readonly deadlines?: Deadlines;
  /** Streams or not; overrides the provider's own default. */
  readonly stream?: boolean;
  /** User data for tools and hooks (`ctx.context`). */
  readonly context?: C;
  /**
   * Time source for timers, deadlines, backoff and `at`. Default: asyncScheduler (timers) and asapScheduler (stage
   * hops).
   */
  readonly scheduler?: SchedulerLike;
  /** Id source for the run and its items. Default: `crypto.randomUUID()`. */
  readonly idGenerator?: (kind: 'run' | 'item') => string;
  /** Random source in [0, 1) for backoff jitter. Default `Math.random`. */
  readonly random?: () => number;
  /**
   * Traces and metrics of the run (docs/telemetry.md): `withTelemetry()` of `loopctl/otel`, or any
   * {@link RunTelemetry}. Sub-runs (agents as tools) inherit it. Default: none (nothing is watched).
   */
  readonly telemetry?: RunTelemetry;
  /**
   * The caller's W3C trace context, for a run whose caller is in another process (docs/telemetry.md,
   * "Context"): `loopctl/bullmq`'s worker passes the one its job carries. Told to `telemetry`, which
   * starts the run's span under it unless a span is active where the run is subscribed. A
   * `traceparent` that is not a valid W3C one is a `ConfigurationError`. Not inherited by sub-runs.
   */
  readonly trace?: TraceCarrier;
  /**
   * Run control beyond a hard cancel (docs/run-control.md): `control.stop()` (a graceful stop at a
   * boundary), `control.cancelToolCall()` (one tool call), `control.approve(callId)` /
   * `control.reject(callId, reason)` (calls awaiting approval) act on this run while it lives. One live run
   * per control (a second one ends `run_failed`, `configuration_error`). Not inherited by sub-runs.
   */
  readonly control?: RunControl;
  /**
   * What a call that needs approval does (docs/run-control.md, "Approvals"): `'wait'` (the default)
   * waits in memory at the `approval` checkpoint; `'suspend'` ends the run `run_completed` with
   * `stopReason: 'needs_approval'` and a JSON-serialisable `suspended` value, committing nothing;
   * `resume()` continues it later.
   */
  readonly approvals?: 'wait' | 'suspend';
  /**
   * Limits of the run's tokens and cost (docs/long-runs.md, "Budgets"): checked before each model call
   * (estimated) and after each response (reported); at a limit the run ends `run_completed` with
   * `stopReason: 'budget'` at the next boundary, or, with `onLimit: 'cancel'`, is cancelled at once. With
   * `prices`, every terminal event has `cost`. Not inherited by sub-runs (their usage counts toward it).
   */
  readonly budget?: Budget;
  /**
   * The secret a suspension is sealed with (docs/run-control.md, "Integrity"): a string or bytes, at
   * least 32 bytes (`ConfigurationError` `options.suspensionKey` otherwise). Give the same key to the
   * run that suspends and to `resume`: `resume` refuses a suspension that does not match its seal
   * (`ResumeError`). Without one, this process's random key seals it: it resumes in this process only.
   * Never logged, never in an event. Not inherited by sub-runs (they never suspend).
   */
  readonly suspensionKey?: SuspensionKey;
  /**
   * Tools the client runs (docs/run-control.md, "Front-end tools"): offered to the model with the agent's
   * own; a call to one is never run here: it suspends the run (as `approvals: 'suspend'` does, whatever
   * `approvals` is), `suspended.frontend` naming it, and `resume()` answers it with `{ result }`. Each is
   * `{ name, description, parameters? }` (a JSON Schema object); a bad entry, a repeated name or one of the
   * agent's tool names is a `ConfigurationError` naming it (`options.frontendTools[i].name`). Give them
   * again to `resume` for the turns after it. Not inherited by sub-runs.
   */
  readonly frontendTools?: readonly FrontendTool[];
}

/**
 * What a {@link RunHandle} keeps to replay to a subscriber that comes later: `'all'` every event;
 * `'compact'` every event, but consecutive `text_delta`s of one model attempt as one (its `seq` the
 * last one's, with `fromSeq` and `offsets`), so a long streamed answer costs about its text.
 */
export type ReplayMode = 'all' | 'compact';

/** Options of `start()`: those of `run()`, and what the handle replays. */
export interface StartOptions<C = unknown> extends RunOptions<C> {
  /** What `events$` replays to a late subscriber. Default `'all'`. */
  readonly replay?: ReplayMode;
}

/**
 * What a completed run resolves `handle.result` with. `items` are the run's new Items (what it committed).
 * `output` is the final answer's raw text; `value` its parsed and validated form, for an agent with an
 * `output` schema (absent otherwise). `suspended`: set when the run suspended for approval
 * (`stopReason: 'needs_approval'`, `output` ''; it committed nothing and `items` is empty): pass it to
 * `resume()`.
 */
export interface RunResult<O = unknown> {
  readonly suspended?: Suspended;
  readonly runId: string;
  /**
   * `'completed'` (a final answer), `'stopped'` (a graceful stop reached its boundary), `'needs_approval'`
   * (suspended) or `'budget'` (a limit of the `budget` option was reached: `budget` has the figures), as on
   * `run_completed`.
   */
  readonly stopReason: 'completed' | 'stopped' | 'needs_approval' | 'budget';
  /** With `stopReason: 'budget'`: which limit, its value and what was used (see `BudgetFiguresSchema`). */
  readonly budget?: BudgetFigures;
  /** What the run cost, when the `budget` option has `prices` (see `CostSchema`). */
  readonly cost?: Cost;
  readonly output: string;
  readonly value?: O;
  readonly finishReason: FinishReason;
  readonly usage: Usage;
  readonly items: readonly Item[];
  readonly undelivered: readonly Undelivered[];
}

/**
 * A hot run (`start()`): it began at once. `events$` replays the run's events
 * so far to each subscriber, then the live ones (with `replay: 'compact'`,
 * consecutive `text_delta`s of one attempt replay as one); `cancel(reason)`
 * fires a token the run owns;
 * `result` resolves with the {@link RunResult} or rejects with
 * `RunCancelledError` / `RunFailedError`.
 */
export interface RunHandle<O = unknown> {
  readonly runId: string;
  readonly events$: Observable<RunEvent>;
  readonly mailbox: Mailbox;
  readonly result: Promise<RunResult<O>>;
  cancel(reason?: unknown): void;
  /** The run's {@link RunControl}: `options.control` when given, else one of its own. */
  readonly control: RunControl;
  /** `control.stop(options)`: a graceful stop (docs/run-control.md, "Stop"); false if it took no effect. */
  stop(options?: { readonly at?: StopRequest['at']; readonly graceMs?: number }): boolean;
  /** `control.cancelToolCall(callId, reason)`: cancels one running call or one awaiting approval; false if none. */
  cancelToolCall(callId: string, reason?: unknown): boolean;
  /** Approves a call awaiting approval (its `RunControl`'s `approve`); true if it was awaiting one. */
  approve(callId: string): boolean;
  /** Rejects a call awaiting approval with `reason` (its `RunControl`'s `reject`); true if it was awaiting one. */
  reject(callId: string, reason: string): boolean;
}
