import type { Observable } from 'rxjs';
import type { RunEvent } from '../events.js';
import type { Item } from '../items.js';
import type { FrontendTool, FrontendToolResult } from '../tools/frontend-tool.js';
import type { TraceCarrier } from './trace-carrier.js';

/**
 * The runs of a server, as a UI transport (loopctl/http) or a worker pool drives them: start a run of a
 * named agent on a thread, read its events from any seq, cancel it, steer it. `localRuns()` implements it
 * in-process; a scale-out implementation (a queue of workers) implements the same interface, so the HTTP
 * handler never changes. Isomorphic: types only. docs/ui.md describes the contract.
 *
 * Every method takes the caller's `principal` (from `authorize`): a run belongs to the principal that
 * started it, and for anyone else it does not exist — an unknown `runId` and another principal's run both
 * reject with `RunNotFoundError` ("never a leak of existence"). Booleans answer "did it take effect": `false`
 * for a run that has ended, or an id that names nothing.
 *
 * The command methods (`cancel`, `stop`, `steer`, `withdraw`, `decide`, `cancelToolCall`) are one protocol
 * (`RunCommand`, docs/ui.md "The Runs interface"): each builds its command and checks it with
 * `parseRunCommand`, the only validator, before the run is looked up, so a bad field (`Infinity`, `NaN`, a
 * negative or non-integer `graceMs`, one above 2³¹−1 ms, an unknown key) rejects with the same
 * `ConfigurationError` naming it from JavaScript, HTTP and a queue; where the run lives, `applyRunCommand`
 * runs it. Retention: a run's events stay readable for a documented time after its end (`localRuns`:
 * `retainFinishedMs`, default 10 minutes; `queueRuns`: `retainFinishedMs`, default 24 h), then every method
 * answers `RunNotFoundError` for it. `loopctl/node/testing`'s `runsContract` checks all of this.
 */
export interface Runs {
  /**
   * Starts a run of `agent` on thread `threadId` (the session key). `input` Items whose `id` the thread's
   * session already holds are left out (the same Item again) or rejected (`HistoryConflictError`: the id
   * names a different Item); `tool_result` Items have no id and always count as new. When a run of this
   * principal is live on the thread, `ifBusy` decides: `'steer'` (the default) pushes the new user input
   * into that run's mailbox and answers its `runId` with the `steeringId`; `'reject'` rejects with
   * `ThreadBusyError`; `'enqueue'`, `'interrupt'` and `'rollback'` are for implementations that can queue
   * or restart runs (`NotSupportedError` where they cannot). Rejects with `AgentNotFoundError` for an
   * unknown agent and `ConfigurationError` (naming the field) for bad input. `trace` is the caller's
   * W3C trace context (the HTTP handler passes the request's `traceparent`); an implementation that
   * traces (`instrumentRuns` of `loopctl/otel`) starts the run in it and answers `traceparent`, the
   * trace context of the start, which the handler writes back; others ignore both. `frontendTools`: tools
   * the client runs, offered to the model for this run (the run option, docs/run-control.md "Front-end
   * tools"; over HTTP `RunAgentInput.tools`); a call to one suspends the run, and `resume` answers it with
   * `{ result }`. An implementation that cannot offer them rejects with `NotSupportedError` naming
   * `frontendTools`; one that steers a live run ignores them.
   */
  start(req: {
    agent: string;
    threadId: string;
    input: string | readonly Item[];
    principal: string;
    ifBusy?: 'reject' | 'enqueue' | 'interrupt' | 'rollback' | 'steer';
    trace?: TraceCarrier;
    frontendTools?: readonly FrontendTool[];
  }): Promise<{ runId: string; steeringId?: string; traceparent?: string }>;
  /**
   * Optional: resumes the thread's suspended run (run control's `approvals: 'suspend'`; docs/run-control.md,
   * "Suspend mode") with a decision for each pending call, the checks of `resume()` included: a new run on the
   * thread (a new `runId`) that goes on where the suspended one stopped. `input`: the client's copy of the
   * conversation; an Item that neither the thread's session nor the suspension holds is refused
   * (`ConfigurationError` naming `input`: a resume takes no new message). Rejects with `ThreadBusyError` while a
   * run is live on the thread, `ConfigurationError` naming `resume` when the thread's last run did not suspend
   * (or a run started on it since), `ResumeError` for a decision the suspension refuses (`unknown_call`,
   * `missing_decision`, a tampered suspension, `already_resumed`), `AgentNotFoundError` for an unknown agent.
   * A front-end tool's call is answered with `{ result }` (its decision); `frontendTools` are offered to the
   * turns after the resume, as for `start`.
   * An implementation without it answers the HTTP route's resume with 501.
   */
  resume?(req: {
    agent: string;
    threadId: string;
    input: readonly Item[];
    decisions: Readonly<Record<string, ToolDecision | FrontendToolResult>>;
    principal: string;
    trace?: TraceCarrier;
    frontendTools?: readonly FrontendTool[];
  }): Promise<{ runId: string; traceparent?: string }>;
  /**
   * The run's events with `seq > afterSeq` (all of them without `afterSeq`), then its live events, up to
   * and including the terminal event; then it completes. With `afterSeq` at or past the terminal's seq of a
   * run that has ended it completes at once, emitting nothing. A compacted `text_delta` (replay
   * `'compact'`) that straddles `afterSeq` is cut there, so exactly the missed text comes. Errors with
   * `RunNotFoundError` (unknown run, another principal's, or one no longer kept), and `ConfigurationError`
   * naming `afterSeq` unless it is an integer ≥ -1.
   */
  events(runId: string, opts: { principal: string; afterSeq?: number }): Observable<RunEvent>;
  /**
   * Cancels a live run with `reason` and resolves once its terminal event was emitted (guarantee 3:
   * terminal before cancel() returns). `true` for exactly one cancel: the one that ended the run with
   * `run_cancelled`. `false` when the run had ended, ended otherwise (a completion already being committed
   * is not undone), or another cancel ended it first: of concurrent cancels exactly one answers `true`.
   */
  cancel(runId: string, reason: unknown, principal: string): Promise<boolean>;
  /**
   * Graceful stop at a boundary (docs/run-control.md, "Stop"): `true` when the live run took it (it emits
   * `stop_requested` and ends `run_completed` with `stopReason: 'stopped'`, or is cancelled with a
   * `stop_timeout` reason once `graceMs` passes); `false` when the run has ended, its outcome is decided,
   * or a stop was taken before. `at` defaults to `'turn_end'`; `graceMs` is an integer number of ms from 0
   * to 2³¹−1. `ConfigurationError` naming `at` or `graceMs` for a bad value.
   */
  stop(
    runId: string,
    opts: { at?: 'turn_end' | 'tool_call_end'; graceMs?: number },
    principal: string,
  ): Promise<boolean>;
  /**
   * Pushes steering `text` into a live run's mailbox; resolves with the steering id (the id of the `user`
   * Item and of the `user_message_injected` event it becomes). `RunNotLiveError` for a run that ended;
   * `ConfigurationError` naming `text` when it is not a string.
   */
  steer(runId: string, text: string, principal: string): Promise<{ id: string }>;
  /**
   * Withdraws queued steering by id (the mailbox's `removeById` rule): `true` means it is never delivered.
   * Also after the run ended, for steering it gave back to the thread. `ConfigurationError` naming
   * `steeringId` unless it is a non-empty string.
   */
  withdraw(runId: string, steeringId: string, principal: string): Promise<boolean>;
  /**
   * Approves or rejects a tool call awaiting approval ("approvals", docs/run-control.md): `true` when the call
   * was awaiting a decision (it starts, or fails with `ToolCallRejectedError` and `reason` for the model);
   * `false` for an unknown call id, a call decided already, or a run that has ended. `ConfigurationError`
   * naming `approve` or `reason` for a bad decision.
   */
  decide(
    runId: string,
    callId: string,
    decision: { approve: true } | { approve: false; reason: string },
    principal: string,
  ): Promise<boolean>;
  /**
   * Cancels one tool call of a live run that is running or awaiting approval ("Per-call cancel",
   * docs/run-control.md): its `tool_call_failed { interrupted: true }` is out before this resolves `true`;
   * the run goes on. `false` for an id that names no such call or a run that has ended.
   * `ConfigurationError` naming `callId` unless it is a non-empty string.
   */
  cancelToolCall(runId: string, callId: string, reason: unknown, principal: string): Promise<boolean>;
}

/** What {@link Runs.start} takes. */
export type StartRunRequest = Parameters<Runs['start']>[0];
/**
 * What {@link Runs.start} resolves with: the run's id, the steering id when the input steered a live run, and
 * the trace context of the start when the implementation traces.
 */
export type StartedRun = Awaited<ReturnType<Runs['start']>>;
/** How a thread with a live run takes a new start (see {@link Runs.start}). */
export type IfBusy = NonNullable<StartRunRequest['ifBusy']>;
/** Where a graceful stop lands (see {@link Runs.stop}). */
export type StopOptions = Parameters<Runs['stop']>[1];
/** What {@link Runs.resume} takes. */
export type ResumeRunRequest = Parameters<NonNullable<Runs['resume']>>[0];
/** An approval decision (see {@link Runs.decide}). */
export type ToolDecision = Parameters<Runs['decide']>[2];
