import type { CancelSignal } from '../cancel/cancel-signal.js';
import type { Approvals, Verdict } from '../control/approvals.js';
import type { Suspended } from '../control/suspended.js';
import type { RunEvent } from '../events.js';
import type { Item, ToolCall } from '../items.js';
import type { TelemetryAttempt, TelemetryMcpRequest } from './telemetry.js';

/**
 * Internal to the package (not exported). Context propagation around the code a run calls: a
 * telemetry layer passes these to `createRun` to run a tool, a model request, a hook or the run
 * itself inside its span. Each function gets `fn`, the synchronous call into that code (for a
 * tool: calling `execute` and subscribing to what it returned; for a model request:
 * `provider.call` and its subscription; for a hook: the hook call; for the run: its start), and
 * must call it exactly once, synchronously, and return its value. A throw from a wrapper counts as
 * a throw of the wrapped code. Sub-runs (agents as tools) inherit the wrappers of their parent.
 * `mcp` surrounds an MCP request of a tool of `mcpTools` (`fn` sends it and returns its Promise).
 * The `telemetry` run option is opened into these per run (`telemetry-hooks.ts`).
 */
export interface RunWrap {
  run?<T>(run: { readonly runId: string; readonly agent: string }, fn: () => T): T;
  tool?<T>(call: ToolCall, fn: () => T): T;
  model?<T>(attempt: TelemetryAttempt, fn: () => T): T;
  hook?<T>(hook: string, fn: () => T): T;
  mcp?<T>(request: TelemetryMcpRequest, fn: () => Promise<T>): Promise<T>;
}

/** Internal: what a telemetry layer hears of a run besides the wrappers (see `RunObserver`); never throws. */
export interface RunTap {
  event(event: RunEvent, item: Item | undefined): void;
  ending(outcome: 'completed' | 'cancelled' | 'failed'): void;
}

/** Internal: how a run settled, for `start()`: the Items a completed run committed, or a failed run's error. */
export interface Settled {
  readonly items?: readonly Item[];
  readonly suspended?: Suspended;
  readonly error?: unknown;
}

/**
 * Internal: what only the package passes to `createRun`, never a caller: nothing here is part of
 * `RunOptions` or `ToolContext`.
 */
export interface RunInternals {
  /** A token the run owns (a child of the caller's): `start()`'s handle and a sub-run fire it, never the caller's. */
  readonly token?: CancelSignal;
  /** Told once how the run settled, before its terminal event is delivered. */
  readonly onSettled?: (settled: Settled) => void;
  /** Context propagation around tools, model requests, hooks, MCP requests and the run. */
  readonly wrap?: RunWrap;
  /** Told of each event and of the outcome being decided (the `telemetry` run option, opened). */
  readonly tap?: RunTap;
  /** A sub-run's parent: the run and the tool call it runs in (told to the `telemetry` option). */
  readonly parent?: { readonly runId: string; readonly callId: string };
  /**
   * A sub-run's link to its root run's approvals: the sub-run's calls awaiting approval are decided (and
   * cancelled) through the root run's `RunControl`. Returns the unlink.
   */
  readonly adoptApprovals?: (approvals: Approvals) => () => void;
  /**
   * A sub-run's root run suspends for approval (`approvals: 'suspend'` on it): the sub-run suspends too, and
   * its suspension reaches the root through its parent ("Nested approvals", docs/run-control.md). A sub-run
   * given `approvals: 'suspend'` under a root that waits cannot wait for a decision: its calls that need
   * approval fail closed at once (`ToolApprovalUnavailableError`), never waiting in memory.
   */
  readonly rootSuspends?: boolean;
  /** A resumed run (`resume()`): the suspension it continues and the verdict of each call decided. */
  readonly resume?: ResumeState;
  /** A run continued from its journal (`resumeRun()`): its run id, the turn it goes on from, what it replays. */
  readonly continued?: ContinuedState;
}

/**
 * Internal: what a continued run goes on from (docs/sessions.md, "Durable runs"). Its input is its
 * journalled Items (`journalled` of them); `runId` is the run's own; `fromTurn` its last journalled turn.
 * `pending`: the input ends with turn `fromTurn + 1`'s journalled response (its Items after the
 * `journalled` ones), whose tool calls the run goes on from (docs/sessions.md, "No tool runs twice").
 */
export interface ContinuedState {
  readonly runId: string;
  readonly fromTurn: number;
  readonly journalled: number;
  readonly pending?: boolean;
}

/** Internal: what a resumed run continues from (docs/run-control.md, "Approvals"). */
export interface ResumeState {
  readonly suspended: Suspended;
  readonly verdicts: ReadonlyMap<string, Verdict>;
  /** The client's result of each front-end tool's call answered on resume, by call id. */
  readonly answers: ReadonlyMap<string, string>;
  /** What each suspended sub-run of the batch resumes from, by the agent tool call's id (`suspended.nested`). */
  readonly nested: ReadonlyMap<string, ResumeState>;
}
