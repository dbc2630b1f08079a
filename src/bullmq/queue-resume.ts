import { randomUUID } from 'node:crypto';
import type { SuspensionKey } from '../control/seal.js';
import { checkResume } from '../engine/resume.js';
import { ConfigurationError, ResumeError } from '../errors.js';
import { AgentNotFoundError, NotSupportedError, ThreadBusyError } from '../runs/errors.js';
import { checkStart } from '../runs/check-start.js';
import { newInput, settle } from '../runs/new-input.js';
import type { LocalRunsSessionStore } from '../runs/thread.js';
import { traceCarrierOf } from '../runs/trace-carrier.js';
import type { ResumeRunRequest } from '../runs/types.js';
import type { QueueAuth } from './auth.js';
import type { Keys } from './keys.js';
import type { ScriptedRedis } from './scripts.js';
import { signJob, type RunJobData } from './shared.js';
import { readSuspension } from './suspension-record.js';
import { queueSuspensionKey } from './worker-resume.js';

/** What `queueRuns().resume` needs of its `queueRuns`. */
export interface QueueResumeContext {
  readonly redis: ScriptedRedis;
  readonly keys: Keys;
  readonly auth: QueueAuth;
  readonly sessions: LocalRunsSessionStore | undefined;
  readonly agents: readonly string[] | undefined;
  readonly sessionId: (threadId: string, principal: string) => string;
  /** The workers' `runOptions.suspensionKey`, if they have one. */
  readonly suspensionKey: SuspensionKey | undefined;
  /** The ids the thread holds beyond its session (steering queued, its runs' input). */
  heldIds(threadKey: string): Promise<Set<string>>;
  /** Adds the BullMQ job of a run admitted on its thread. */
  add(runId: string, job: RunJobData): Promise<void>;
}

/**
 * `queueRuns().resume` (docs/scale-out.md, "Approvals across processes"): the thread's kept suspension (its tag
 * checked), then the checks of the engine's `resume()` that need no run (seal, agent, `unknown_call`,
 * `missing_decision`, decision shapes), "already resumed" (the run that resumed it last completed, or is no longer
 * known), then a run admitted on the thread as a start with `ifBusy: 'reject'` whose signed job carries the
 * suspension and the decisions. Its worker resumes it with the engine's `resume()`, which records each resumed
 * call's start in the session store first: an approved call runs at most once across resumes and workers.
 */
export function queueResume(ctx: QueueResumeContext) {
  const { redis, keys, auth } = ctx;
  const sealKey = queueSuspensionKey(auth, ctx.suspensionKey);

  return async function resume(req: ResumeRunRequest): Promise<{ runId: string }> {
    checkStart({ ...req, input: Array.isArray(req?.input) ? req.input : [] });
    if (req.decisions === null || typeof req.decisions !== 'object' || Array.isArray(req.decisions)) {
      throw new ConfigurationError('decisions', 'must be an object of decisions by call id');
    }
    if (req.frontendTools !== undefined && req.frontendTools.length > 0) {
      throw new NotSupportedError('frontendTools', 'a queued run cannot offer front-end tools yet');
    }
    if (ctx.agents !== undefined && !ctx.agents.includes(req.agent)) throw new AgentNotFoundError(req.agent);
    const threadKey = ctx.sessionId(req.threadId, req.principal);
    const live = await liveRun(threadKey);
    if (live !== undefined) throw new ThreadBusyError(req.threadId, live);
    const kept = await readSuspension(redis, keys, auth, threadKey);
    if (kept === undefined) {
      throw new ConfigurationError('resume', `thread ${req.threadId} has no suspended run to resume`);
    }
    const { suspended } = kept.record;
    checkResume(suspended, req.decisions, req.agent, sealKey);
    if (kept.by !== '') {
      const [state, terminal] = await redis.hmget(keys.run(kept.by), 'state', 'terminal');
      if (state !== null && state !== 'ended') throw new ThreadBusyError(req.threadId, kept.by);
      // A resumed run that failed or was cancelled may be resumed again (its started calls never run again).
      if (terminal !== 'run_failed' && terminal !== 'run_cancelled') {
        const id = (suspended as { suspensionId?: unknown }).suspensionId;
        throw new ResumeError('already_resumed', `suspension ${String(id)} was resumed by run ${kept.by}`);
      }
    }
    // The client's copy of the conversation: what the session or the suspension holds; nothing new.
    const history = ctx.sessions ? await settle((await ctx.sessions.session(threadKey)).load()) : [];
    const held = await ctx.heldIds(threadKey);
    const items = (suspended as { items?: unknown }).items;
    const extra = newInput(req.input, [...history, ...(Array.isArray(items) ? items : [])], (id) => held.has(id));
    if (extra.length > 0) {
      throw new ConfigurationError('input', 'a resume takes no new message: send it once the resumed run has ended');
    }
    const runId = randomUUID();
    const trace = traceCarrierOf(req.trace?.traceparent, req.trace?.tracestate);
    const job = signJob(auth, {
      runId,
      agent: req.agent,
      sessionId: threadKey,
      input: [],
      ...(trace ? { trace } : {}),
      resume: { suspended, decisions: req.decisions },
    });
    const fields = ['principal', req.principal, 'agent', req.agent, 'thread', threadKey, 'job', JSON.stringify(job)];
    const admit = await redis.lcAdmit(keys.ns, runId, threadKey, 'reject', ...fields, 'ids', '[]');
    if (admit[0] !== 'start') throw new ThreadBusyError(req.threadId, admit[1] ?? '');
    // Before its job exists: a later resume reads this run's outcome.
    await redis.eval(MARK_RESUMED, 1, keys.suspension(threadKey), runId);
    await ctx.add(runId, job);
    return { runId };
  };

  /** The thread's run that is not ended, if any. */
  async function liveRun(threadKey: string): Promise<string | undefined> {
    const live = await redis.hget(keys.thread(threadKey), 'live');
    if (live === null) return undefined;
    const state = await redis.hget(keys.run(live), 'state');
    return state !== null && state !== 'ended' ? live : undefined;
  }
}

/** markResumed: KEYS suspension hash; ARGV runId. Names the run resuming it (a hash that expired is not made again). */
const MARK_RESUMED = `
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
return redis.call('HSET', KEYS[1], 'by', ARGV[1])
`;
