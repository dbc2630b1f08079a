import { LoopctlError } from '../errors.js';
import { isInstance } from '../describe.js';

/**
 * The errors a {@link Runs} implementation rejects with. Each has a stable `code`, which a transport maps
 * to its own status (loopctl/http: docs/ui.md, "Routes"), so an implementation from another copy of the
 * package is recognised by `code` as well as by class.
 */

/** No such run for this principal: unknown, another principal's, or no longer kept. Never says which. */
export class RunNotFoundError extends LoopctlError {
  override readonly name: string = 'RunNotFoundError';
  readonly code = 'run_not_found' as const;
  constructor(readonly runId: string) {
    super(`no run ${JSON.stringify(runId)}`);
  }
}

/** `start({ agent })` names no agent of this Runs; `field` is `agent`. */
export class AgentNotFoundError extends LoopctlError {
  override readonly name: string = 'AgentNotFoundError';
  readonly code = 'agent_not_found' as const;
  readonly field = 'agent';
  constructor(readonly agent: string) {
    super(`no agent ${JSON.stringify(agent)}`);
  }
}

/** `start({ ifBusy: 'reject' })` on a thread where a run of this principal is live (`runId`). */
export class ThreadBusyError extends LoopctlError {
  override readonly name: string = 'ThreadBusyError';
  readonly code = 'thread_busy' as const;
  constructor(
    readonly threadId: string,
    readonly runId: string,
  ) {
    super(`thread ${JSON.stringify(threadId)} has a live run (${runId})`);
  }
}

/**
 * An input Item whose `id` the thread's session holds for a different Item (another role, or a user
 * message with other text): the stored history cannot be rewritten. `field` names the input entry
 * (`input[2]`).
 */
export class HistoryConflictError extends LoopctlError {
  override readonly name: string = 'HistoryConflictError';
  readonly code = 'history_conflict' as const;
  constructor(
    readonly field: string,
    readonly id: string,
  ) {
    super(`${field}: id ${JSON.stringify(id)} names a different item in the thread's history`);
  }
}

/** Steering for a run that has ended. */
export class RunNotLiveError extends LoopctlError {
  override readonly name: string = 'RunNotLiveError';
  readonly code = 'run_not_live' as const;
  constructor(readonly runId: string) {
    super(`run ${JSON.stringify(runId)} has ended`);
  }
}

/** A valid request this implementation cannot serve (e.g. `ifBusy: 'enqueue'` in `localRuns`); `field` names it. */
export class NotSupportedError extends LoopctlError {
  override readonly name: string = 'NotSupportedError';
  readonly code = 'not_supported' as const;
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(`${field}: ${message}`);
  }
}

/** A method whose feature has not landed yet (`stop`, `decide`: run control). */
export class NotImplementedError extends LoopctlError {
  override readonly name: string = 'NotImplementedError';
  readonly code = 'not_implemented' as const;
  constructor(readonly feature: string) {
    super(`${feature} is not implemented yet`);
  }
}

/**
 * Steering (`steer` / `withdraw`) for a live run whose mailbox is held by another process (a `loopctl/bullmq`
 * worker) that did not answer within `timeoutMs`: whether the steering was taken is unknown, so it is neither
 * guessed `true` nor `false` (docs/scale-out.md, "Steering across processes"). HTTP 503; the client may retry.
 */
export class MailboxUnavailableError extends LoopctlError {
  override readonly name: string = 'MailboxUnavailableError';
  readonly code = 'mailbox_unavailable' as const;
  constructor(
    readonly runId: string,
    readonly timeoutMs: number,
  ) {
    super(`the mailbox of run ${JSON.stringify(runId)} did not answer within ${timeoutMs} ms`);
  }
}

/** @returns true when `e` is a {@link RunNotFoundError}. */
export const isRunNotFoundError = (e: unknown): e is RunNotFoundError => isInstance(e, RunNotFoundError);
