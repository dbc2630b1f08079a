import { resume } from '../engine/resume.js';
import { start } from '../engine/start.js';
import type { Agent, RunHandle, StartOptions } from '../engine/types.js';
import type { TerminalEvent } from '../events.js';
import type { ApprovalDecision, Suspended } from '../control/suspended.js';
import type { FrontendToolResult } from '../tools/frontend-tool.js';
import type { Redis } from 'ioredis';
import type { QueueAuth } from './auth.js';
import type { RunJobData } from './shared.js';
import { storeSuspension, SUSPENSION_KEY_PURPOSE } from './suspension-record.js';
import type { Keys } from './keys.js';

/**
 * The key a queued run's suspension is sealed with (`suspensionKey`): the workers' `runOptions.suspensionKey`,
 * else one derived from the queue secret, so every worker (and `queueRuns`) checks the seal of a suspension made
 * on another.
 */
export function queueSuspensionKey(auth: QueueAuth, own: StartOptions['suspensionKey']): NonNullable<typeof own> {
  return own ?? auth.derive(SUSPENSION_KEY_PURPOSE);
}

/**
 * A job's run: the engine's `resume()` for a resume job (`data.resume`: the suspension with its decisions; the
 * engine checks it again, and records each resumed call's start in the session before it runs), else `start()`
 * on `data.input`. Both seal a suspension with {@link queueSuspensionKey}.
 * @throws {ResumeError | ConfigurationError} as `resume()` / `start()` do, before anything ran.
 */
export function startOrResume(
  ctx: { readonly auth: QueueAuth; readonly runOptions: Pick<StartOptions, 'suspensionKey'> },
  agent: Agent<any>,
  data: RunJobData,
  options: StartOptions<any>,
): RunHandle {
  const suspensionKey = queueSuspensionKey(ctx.auth, ctx.runOptions.suspensionKey);
  const all = { ...options, suspensionKey };
  if (data.resume === undefined) return start(agent, data.input, all);
  const decisions = data.resume.decisions as Readonly<Record<string, ApprovalDecision | FrontendToolResult>>;
  return resume(agent, data.resume.suspended as Suspended, decisions, all);
}

/**
 * At a run's terminal, before it is stored: a run that suspended (`run_completed.suspended`) leaves its suspension
 * as its thread's, signed, for `queueRuns().resume` (kept `retainMs`; only while the thread has no run waiting).
 */
export async function keepSuspension(
  ctx: { readonly redis: Redis; readonly keys: Keys; readonly auth: QueueAuth; readonly retainMs: number },
  runId: string,
  data: RunJobData,
  terminal: TerminalEvent,
): Promise<void> {
  if (terminal.type !== 'run_completed' || terminal.suspended === undefined) return;
  const record = { runId, agent: data.agent, suspended: terminal.suspended };
  await storeSuspension(ctx.redis, ctx.keys, ctx.auth, data.sessionId, record, ctx.retainMs).catch(() => undefined);
}
