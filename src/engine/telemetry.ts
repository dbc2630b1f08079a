import type { RunEvent } from '../events.js';
import type { Item, ToolCall } from '../items.js';
import type { Mailbox } from '../mailbox/mailbox.js';
import type { ModelRequest } from '../model/types.js';
import type { TraceCarrier } from '../runs/trace-carrier.js';

/**
 * The `telemetry` run option (docs/telemetry.md): a layer that watches runs and runs their code
 * inside a context of its own. `withTelemetry()` of `loopctl/otel` makes one on OpenTelemetry; the
 * core knows nothing of OpenTelemetry, only this shape. Sub-runs (agents as tools) inherit it.
 */
export interface RunTelemetry {
  /**
   * Called once per run, synchronously as the run is subscribed, before its first event and in the
   * caller's context. What it returns watches this run only. A throw fails nothing: it is reported
   * like a `runEnded` hook's (rxjs `config.onUnhandledError`) and the run goes on without telemetry.
   */
  open(run: TelemetryRun): RunObserver;
}

/** What {@link RunTelemetry.open} is told of a run. */
export interface TelemetryRun {
  readonly runId: string;
  readonly agent: string;
  /** The id of the agent's model (its primary one, e.g. `openai:gpt-4o-mini`). */
  readonly model: string;
  /** The run's input, as given. */
  readonly input: string | readonly Item[];
  /** The run's mailbox: a withdrawal is seen on its `withdrawn$`. */
  readonly mailbox: Mailbox;
  /** Set for a sub-run (an agent used as a tool): the run and the tool call it runs in. */
  readonly parent?: { readonly runId: string; readonly callId: string };
  /** The `trace` run option: the caller's W3C trace context (a run started for another process). */
  readonly trace?: TraceCarrier;
}

/** What a model request is, for {@link RunObserver.model}. */
export interface TelemetryAttempt {
  /** The provider's id (e.g. `openai:gpt-4o-mini`). */
  readonly model: string;
  /** The attempt's number within its model call, from 1 (as on `model_request_started`). */
  readonly attempt: number;
  readonly stream: boolean;
  /** The request as the provider gets it. */
  readonly request: ModelRequest;
}

/** What an MCP request is, for {@link RunObserver.mcp}. */
export interface TelemetryMcpRequest {
  /** The JSON-RPC method, e.g. `tools/call`. */
  readonly method: string;
  /** The server's own name of the tool. */
  readonly tool: string;
  /** The loopctl tool call the request serves. */
  readonly callId: string;
  /** Aborts when the call is torn down (a cancel, a deadline): the request is then abandoned. */
  readonly signal: AbortSignal;
}

/**
 * Watches one run. Every member is optional and must not throw (a throw from `event` or `ending`
 * is reported like a `runEnded` hook's and ignored; one from a wrapper counts as a throw of the
 * code it wraps). Each wrapper receives `fn`, the synchronous call into the code it surrounds, and
 * must call it exactly once, synchronously, and return its value: a telemetry layer runs `fn`
 * inside its span.
 */
export interface RunObserver {
  /**
   * Each event of the run, stamped, just before it is delivered; the terminal event always and
   * last, also when the subscriber unsubscribed (it then reaches no subscriber). `item` is the Item
   * the event records: the assistant Item of `model_response_completed`, the result Item of
   * `tool_call_completed` and `tool_call_failed`.
   */
  event?(event: RunEvent, item?: Item): void;
  /** The outcome is decided and the cleanup starts (for a cancel: the moment the run saw it). */
  ending?(outcome: 'completed' | 'cancelled' | 'failed'): void;
  /** The run's start: `run_started` is delivered inside it. */
  run?<T>(fn: () => T): T;
  /** A tool's `execute` and the subscription to what it returned. */
  tool?<T>(call: ToolCall, fn: () => T): T;
  /** `provider.call` of one attempt and its subscription. */
  model?<T>(attempt: TelemetryAttempt, fn: () => T): T;
  /** One hook call (`turnStarted`, `beforeModelCall`, `beforeToolCall`, `afterToolCall`). */
  hook?<T>(hook: string, fn: () => T): T;
  /** An MCP request made by a tool of `mcpTools`: `fn` sends it and returns its Promise. */
  mcp?<T>(request: TelemetryMcpRequest, fn: () => Promise<T>): Promise<T>;
}
