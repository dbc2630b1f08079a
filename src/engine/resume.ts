import { verdictOf, type Verdict } from '../control/approvals.js';
import { verifySuspension, type SuspensionKey } from '../control/seal.js';
import {
  SuspendedSchema,
  ToolDecisionSchema,
  NESTED_CALL_SEPARATOR,
  pendingCalls,
  type ApprovalDecision,
  type Suspended,
} from '../control/suspended.js';
import { ZERO_USAGE } from '../items.js';
import type { ResumeState } from './internals.js';
import { describeValue } from '../describe.js';
import { ConfigurationError, ResumeError } from '../errors.js';
import {
  FrontendToolRejectionSchema,
  FrontendToolResultSchema,
  type FrontendToolResult,
} from '../tools/frontend-tool.js';
import { startRun } from './start.js';
import type { Agent, RunHandle, StartOptions } from './types.js';

/**
 * Suspensions resumed in this process and not given up: "already resumed" without a session. A resumed
 * run that is cancelled or fails gives its claim back (it committed nothing), so it may be resumed again;
 * the calls it started stay recorded and never run again (`resumed-call.ts`: "Exactly once across resumes").
 */
const claimed = new Set<string>();

/**
 * Continues a run suspended for approval (docs/run-control.md, "Approvals"): `suspended` as
 * `run_completed.suspended` gave it (or its `JSON.parse(JSON.stringify(…))`), `decisions` one per
 * pending call by its `PendingCall.id` (`pendingCalls(suspended)`: its call id, or for a nested sub-run's call
 * `<agent tool callId>/<callId>`): `{ approve: true }` or `{ approve: false, reason }` (a front-end tool's call,
 * named in `suspended.frontend`, is answered with the client's `{ result }` or rejected); `options` as for
 * `start()` (give the same `session` and `mailbox`: steering queued meanwhile is delivered after the resume, once).
 * Starts a new run (a new `runId`) and returns its handle. The run goes on in the suspended turn:
 * its events after its `run_started` are those the waiting path would have emitted after its
 * `tool_approval_requested` events (ignoring `runId`, `seq` and `at`), and at its end it commits, once,
 * the suspended run's Items and its own, the commit carrying `suspensionId`.
 *
 * Throws {@link ResumeError} at once: `version` (not a suspension of version 1); the integrity codes
 * (`unsigned`, `key_mismatch`, `agent_mismatch`, `call_added`, `arguments_changed`, `pending_removed`,
 * `tampered`: the suspension does not match its seal under `options.suspensionKey`, docs/run-control.md,
 * "Integrity"; nothing runs); `unknown_call` (a
 * decision for a call that is not pending), `missing_decision` (a pending call without one), `ambiguous_call`
 * (two pending calls with one decision key: call ids with `/`),
 * `already_resumed` (resumed before in this process). With a session, its load checks the rest: the run
 * ends `run_failed` (`configuration_error`, the error a `ResumeError`; `handle.result` rejects with a
 * `RunFailedError` whose `cause` it is) for `stale_session` and `already_resumed`, and a store refuses a
 * second commit with the same `suspensionId` (`session_error`). Without a session, "already resumed"
 * is known within this process only. A resumed run that fails or is cancelled may be resumed again, but
 * each call of the suspended batch runs at most once across resumes: its start is recorded (in the
 * session with `recordCallStart`, else in this process) before it runs, and a later resume pairs it
 * with a `ToolCallAlreadyStartedError` instead (docs/run-control.md, "Exactly once across resumes");
 * the tool sees `ctx.resumed`. A decision that is not a decision throws `ConfigurationError`
 * naming it (`decisions.<callId>`); bad options as `start()` does.
 *
 * @example
 * const first = await start(agent, 'deploy', { approvals: 'suspend', session }).result;
 * const saved = JSON.stringify(first.suspended);
 * // … hours later …
 * const handle = resume(agent, JSON.parse(saved), { [callId]: { approve: true } }, { session });
 */
export function resume<C = unknown, O = unknown>(
  agent: Agent<C, O>,
  suspended: Suspended,
  decisions: Readonly<Record<string, ApprovalDecision | FrontendToolResult>>,
  options: StartOptions<C> = {},
): RunHandle<O> {
  const s = checkSuspended(suspended);
  // Integrity before anything else: only the calls sealed as pending, decided or free run, for this agent.
  verifySuspension(suspended, s, agent.name, (options as { suspensionKey?: SuspensionKey } | null)?.suspensionKey);
  const state = verdictsOf(s, decisions);
  if (claimed.has(s.suspensionId)) {
    throw new ResumeError('already_resumed', `suspension ${s.suspensionId} was resumed before in this process`);
  }
  const handle = startRun(agent, s.items, options, { resume: state });
  claimed.add(s.suspensionId);
  // Given back at the terminal event itself (not a microtask later), so a resume from its handler, or in
  // virtual time, finds it free.
  const giveBack = handle.events$.subscribe({
    next: (event) => {
      if (event.type === 'run_cancelled' || event.type === 'run_failed') claimed.delete(s.suspensionId);
    },
    error: () => claimed.delete(s.suspensionId),
  });
  handle.result.catch(() => claimed.delete(s.suspensionId)).finally(() => giveBack.unsubscribe());
  return handle;
}

function checkSuspended(value: unknown): Suspended {
  const version = (value as { version?: unknown } | null | undefined)?.version;
  if (version !== 1) {
    throw new ResumeError('version', `suspended.version must be 1 (got ${describeValue(version)})`);
  }
  const parsed = SuspendedSchema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const path = issue?.path.join('.') ?? '';
    const why = `suspended.${path}: ${issue?.message ?? 'invalid'}`;
    throw new ResumeError('version', `not a suspension of version 1: ${why}`);
  }
  return parsed.data;
}

/**
 * Each pending call's verdict: the suspension's own decisions, then the caller's (one per pending call, by its
 * `PendingCall.id`); the client's result of each front-end tool's call answered with `{ result }`
 * ("Front-end tools"); and, for each suspended sub-run of the batch (`suspended.nested`), its own resume state,
 * from the decisions for its calls, keyed `<callId>/<its callId>` ("Nested approvals"). A decision for a call
 * pending nowhere is `unknown_call`; two pending calls with one id (only possible with `/` in call ids) are
 * `ambiguous_call`: no decision is ever applied to two calls.
 */
function verdictsOf(s: Suspended, decisions: unknown): ResumeState {
  if (decisions === null || typeof decisions !== 'object' || Array.isArray(decisions)) {
    throw new ConfigurationError('decisions', 'must be an object of decisions by call id');
  }
  const all = new Set<string>();
  for (const { id } of pendingCalls(s)) {
    if (all.has(id)) throw new ResumeError('ambiguous_call', `two pending calls have the id ${id}`, id);
    all.add(id);
  }
  for (const callId of Object.keys(decisions)) {
    if (!all.has(callId)) throw new ResumeError('unknown_call', `call ${callId} is not pending`, callId);
  }
  return stateOf(s, decisions as Record<string, unknown>, '');
}

/** The resume state of `s`, whose pending calls' decisions are keyed `prefix + callId` in `decisions`. */
function stateOf(s: Suspended, decisions: Readonly<Record<string, unknown>>, prefix: string): ResumeState {
  const frontend = new Set(s.frontend ?? []);
  const verdicts = new Map<string, Verdict>();
  const answers = new Map<string, string>();
  for (const [callId, decision] of Object.entries(s.decisions)) verdicts.set(callId, verdictOf(decision));
  for (const { callId } of s.pending) {
    const key = prefix + callId;
    if (!Object.hasOwn(decisions, key)) continue; // missing: refused below, after every bad decision
    const decision = decisions[key];
    const answer = FrontendToolResultSchema.safeParse(decision);
    if (frontend.has(callId) && answer.success) {
      answers.set(callId, answer.data.result);
      continue;
    }
    // A front-end call's rejection is strict too: `{ result, approve: false, reason }` mixes both, and is refused.
    const parsed = (frontend.has(callId) ? FrontendToolRejectionSchema : ToolDecisionSchema).safeParse(decision);
    if (!parsed.success) {
      const rule = frontend.has(callId)
        ? "is a front-end tool's call: must be { result: string } or { approve: false, reason: string }, not both"
        : 'must be { approve: true } or { approve: false, reason: string }';
      throw new ConfigurationError(`decisions.${key}`, rule);
    }
    verdicts.set(callId, verdictOf(parsed.data));
  }
  for (const { callId } of s.pending) {
    const key = prefix + callId;
    if (!Object.hasOwn(decisions, key)) {
      throw new ResumeError('missing_decision', `pending call ${key} has no decision`, key);
    }
  }
  const nested = new Map<string, ResumeState>();
  for (const [callId, raw] of Object.entries(s.nested ?? {})) {
    const inner = SuspendedSchema.safeParse(raw);
    if (!inner.success) throw new ResumeError('tampered', `suspended.nested.${callId} is not a suspension`, callId);
    // Its usage is the sub-run's so far, counted in this suspension's already: the resumed sub-run starts from 0.
    const under = prefix + callId + NESTED_CALL_SEPARATOR;
    nested.set(callId, stateOf({ ...inner.data, usage: ZERO_USAGE }, decisions, under));
  }
  return { suspended: s, verdicts, answers, nested };
}

/**
 * The checks `resume()` makes before anything runs, without running anything: for a process that hands a
 * resume to another one (`queueRuns().resume`, docs/scale-out.md) and refuses a bad one at once. `agentName`
 * is the agent that will resume it; `key` the `suspensionKey` it was sealed with.
 * @throws {ResumeError} as `resume()` does (`version`, the integrity codes, `unknown_call`, `missing_decision`;
 * not `already_resumed`, which only the resuming process and its session know).
 * @throws {ConfigurationError} for a decision that is not a decision, naming it.
 */
export function checkResume(
  suspended: unknown,
  decisions: unknown,
  agentName: string,
  key: SuspensionKey | undefined,
): void {
  const s = checkSuspended(suspended);
  verifySuspension(suspended, s, agentName, key);
  verdictsOf(s, decisions);
}
