import { randomUUID } from 'node:crypto';
import type { Agent, RunHandle, RunOptions } from '../engine/types.js';
import { isTerminalEvent, type RunEvent, type TerminalEvent } from '../events.js';
import { ZERO_USAGE } from '../items.js';
import type { LocalRunsSessionStore } from '../runs/thread.js';
import { traceCarrierOf } from '../runs/trace-carrier.js';
import { commitPartial } from '../session/commit-partial.js';
import type { Session } from '../session/session.js';
import type { Keys } from './keys.js';
import { MirroredMailbox, type MailboxMirror } from './mirrored-mailbox.js';
import { applyRunCommand } from '../control/apply.js';
import {
  answer,
  signItem,
  steerParts,
  type CancelMode,
  type Envelope,
  type WireItem,
  type WorkerReply,
  type WorkerRequest,
} from './requests.js';
import type { QueueAuth } from './auth.js';
import type { ScriptedRedis } from './scripts.js';
import { commitKeyOf, eventJson, lazySession, type RunJobData } from './shared.js';
import { keepSuspension, queueSuspensionKey, startOrResume } from './worker-resume.js';
import { resumeRun } from '../engine/resume-run.js';
import { toLastValue } from '../last-value.js';
import { lastValueFrom } from 'rxjs';

/** A run this worker has taken: claiming it, running it, or watching the worker that owns it. */
export interface LocalRun {
  readonly runId: string;
  handle?: RunHandle;
  mailbox?: MirroredMailbox;
  /** A cancel that came before the run was started here (applied at its start). */
  cancel?: { readonly reason: unknown };
  mode: CancelMode;
  /** Requests that came while the run was being claimed, answered once it runs. */
  readonly waiting: (WorkerRequest & Envelope)[];
  /** This worker's claim token of the run (its `claim` counter when claimed), once claimed. */
  token?: string;
  /** The terminal event was emitted (steering now answers `not_here`). */
  ended: boolean;
  /** The type of the terminal event, once emitted. */
  terminal?: TerminalEvent['type'];
  /** The terminal event's stop reason and, for a cancel, its reason (for the worker's line per run). */
  ending?: { readonly stopReason: string; readonly reason?: unknown };
  readonly done: Promise<void>;
  settle(): void;
}

/** What running a run needs of its worker. */
export interface RunContext {
  readonly redis: ScriptedRedis;
  readonly keys: Keys;
  /** Checks and signs what crosses Redis (the queue `secret`). */
  readonly auth: QueueAuth;
  readonly workerId: string;
  readonly agents: Readonly<Record<string, Agent<any>>>;
  readonly sessions: LocalRunsSessionStore | undefined;
  readonly runOptions: Omit<RunOptions<any>, 'mailbox' | 'session' | 'steer$' | 'idGenerator' | 'trace'>;
  readonly retainMs: number;
  /**
   * `onWorkerLost: 'continue'`: runs journal their turns (by run id), every claim commits under
   * `<runId>#<claim>`, and a run's journal is discarded once its terminal event is stored.
   */
  readonly continueRuns?: boolean;
  /** How long a rerun's lease waits for a dead worker's lease to expire (ms). */
  readonly leasePatienceMs: number;
  /** Told when a run's terminal event is emitted here (before it is stored: Redis may be unreachable). */
  ended(local: LocalRun, data: RunJobData): void;
  /** Adds the BullMQ job of a run that became the thread's next (its job data as stored). */
  enqueue(runId: string, jobJson: string): Promise<void>;
}

export function newLocalRun(runId: string): LocalRun {
  let settle!: () => void;
  const done = new Promise<void>((resolve) => (settle = resolve));
  return { runId, mode: 'cancel', waiting: [], ended: false, done, settle };
}

/**
 * The mailbox hash of `runId` written by the claim `token` (the `lcMailbox` script: nothing once the claim is
 * no longer the run's current one).
 */
function mirrorOf(ctx: RunContext, runId: string, token: string): MailboxMirror {
  const { redis, keys } = ctx;
  return {
    set: (id, json) => void redis.lcMailbox(keys.ns, runId, token, 'set', id, json).catch(() => undefined),
    del: (ids) => void redis.lcMailbox(keys.ns, runId, token, 'del', ...ids).catch(() => undefined),
  };
}

/**
 * Runs a claimed run to its terminal event: the engine's `start()` with a mailbox mirrored into Redis, each
 * event appended to the run's stream, the terminal one by the script that refuses a second. `seqBase` > 0 is a
 * rerun after a lost worker: its `run_started` is left out and its events continue after the stored ones.
 * `token` is the claim's ownership token: every write of the run — its events, its mailbox, its terminal, its
 * session commit (under the claim's commit key, which a peer fences off before it declares the run lost) — is
 * refused once the token is no longer the run's current claim. `continued`: the run goes on from its last
 * journalled turn (`resumeRun`: its events continue with `run_resumed`) instead of starting on its input.
 */
export async function execute(
  ctx: RunContext,
  local: LocalRun,
  data: RunJobData,
  claimed: readonly WireItem[],
  seqBase: number,
  token: string,
  continued = false,
): Promise<void> {
  const { redis, keys } = ctx;
  local.token = token;
  const tag = (id: string, content: string) => ctx.auth.sign(steerParts(data.sessionId, id, content));
  const mailbox = new MirroredMailbox(mirrorOf(ctx, local.runId, token), claimed, tag);
  local.mailbox = mailbox;
  const agent = Object.hasOwn(ctx.agents, data.agent) ? ctx.agents[data.agent] : undefined;
  const unknown = { name: 'AgentNotFoundError', message: `no agent ${JSON.stringify(data.agent)} on this worker` };
  if (agent === undefined) return failAtStart(ctx, local, data, mailbox, unknown);
  const perClaim = ctx.continueRuns === true;
  const session: Session | undefined = ctx.sessions
    ? lazySession(
        ctx.sessions,
        data.sessionId,
        seqBase > 0 ? ctx.leasePatienceMs : 0,
        commitKeyOf(local.runId, token, perClaim),
        perClaim,
        claimNumber(token),
      )
    : undefined;
  const ids = (kind: 'run' | 'item'): string => (kind === 'run' ? local.runId : randomUUID());
  let handle: RunHandle;
  try {
    // The caller's trace context from the job (an invalid one is ignored whole): the run's telemetry joins it.
    const trace = traceCarrierOf(data.trace?.traceparent, data.trace?.tracestate);
    const options = {
      ...ctx.runOptions,
      ...(trace ? { trace } : {}),
      replay: 'compact' as const,
      mailbox,
      ...(session ? { session } : {}),
      idGenerator: ids,
    };
    // A continued run goes on from its journal; a resume job continues its suspension (./worker-resume.ts);
    // any other starts on its input.
    handle = continued
      ? await resumeRun(agent, local.runId, {
          ...options,
          suspensionKey: queueSuspensionKey(ctx.auth, ctx.runOptions.suspensionKey),
        })
      : startOrResume(ctx, agent, data, options);
  } catch (error) {
    // A ConfigurationError before anything ran (an input or option the engine refuses): the run fails here.
    const {
      name = 'Error',
      message = String(error),
      field,
    } = error as { name?: string; message?: string; field?: string };
    return failAtStart(ctx, local, data, mailbox, { name, message, ...(field ? { field } : {}) });
  }
  local.handle = handle;
  if (local.cancel) handle.cancel(local.cancel.reason);
  for (const request of local.waiting.splice(0)) onRequest(ctx, local, request);
  await new Promise<void>((resolve) => {
    let chain = Promise.resolve();
    handle.events$.subscribe((original) => {
      let event = original;
      if (seqBase > 0) {
        if (event.type === 'run_started') return;
        event = { ...event, seq: seqBase + event.seq - 1 } as RunEvent;
      }
      if (!isTerminalEvent(event)) {
        redis.lcAppend(keys.ns, local.runId, String(event.seq), eventJson(event), token).then(
          ([stored]) => {
            // The run has its terminal already, or another claim (it was declared lost elsewhere, or rerun):
            // stop working on it.
            if ((stored === -1 || stored === -3) && !local.ended) handle.cancel(RUN_ENDED_ELSEWHERE);
            // Redis lost the run's keys (restarted keeping nothing): the run cannot go on; its terminal is
            // stored alone, so readers find it.
            if (stored === -4 && !local.ended) handle.cancel(EVENT_STORE_UNAVAILABLE_REASON);
          },
          () => undefined,
        );
        return;
      }
      local.ended = true;
      local.terminal = event.type;
      local.ending = {
        stopReason: event.stopReason,
        ...(event.type === 'run_cancelled' ? { reason: event.reason } : {}),
      };
      ctx.ended(local, data);
      const terminal = event;
      chain = chain
        .then(() => finish(ctx, local, data, terminal, session, mailbox))
        .then(() => (seqBase === 0 ? compact(ctx, local.runId, handle) : undefined))
        .then(resolve, resolve);
    });
  });
}

/** The claim token as a journal write's claim (`JournalOptions.claim`): its number, or none for a token that is not. */
export function claimNumber(token: string): number | undefined {
  const claim = Number(token);
  return Number.isSafeInteger(claim) && claim >= 1 ? claim : undefined;
}

/** Stores the terminal event (after `commitPartial` for an interrupted run); the thread's next run is queued. */
async function finish(
  ctx: RunContext,
  local: LocalRun,
  data: RunJobData,
  terminal: TerminalEvent,
  session: Session | undefined,
  mailbox: MirroredMailbox,
): Promise<void> {
  if (terminal.type === 'run_cancelled' && local.mode === 'interrupt' && session) {
    // ifBusy 'interrupt': the run's consistent prefix stays; the steering it holds is delivered with it.
    await commitPartial(session, terminal, mailbox).catch(() => undefined);
  }
  await keepSuspension(ctx, local.runId, data, terminal); // a suspension stays the thread's (./worker-resume.ts)
  const back = mailbox.peek().map((t) => JSON.stringify(signItem(ctx.auth, data.sessionId, t)));
  const { redis, keys } = ctx;
  const owner = `${ctx.workerId}#${local.token ?? ''}`;
  const args = [keys.ns, local.runId, String(terminal.seq), eventJson(terminal), 'running', owner];
  const result = await redis.lcTerminal(...args, String(ctx.retainMs), '0', '', ...back);
  // Stored: the run ended here, its journal is done with (refused: another claim has the run and its journal).
  if (ctx.continueRuns === true && typeof result[0] === 'number' && result[0] >= 0) {
    await discardJournal(ctx, data.sessionId, local.runId);
  }
  await next(ctx, result);
}

/** Removes the journal of `runId` from its thread's session, when the store keeps one (an error is ignored). */
export async function discardJournal(
  ctx: Pick<RunContext, 'sessions'>,
  sessionId: string,
  runId: string,
): Promise<void> {
  try {
    const session = await ctx.sessions?.session(sessionId);
    if (typeof session?.discardJournal === 'function') {
      await lastValueFrom(toLastValue(session.discardJournal(runId)));
    }
  } catch {
    // a journal left behind is listed by `journalledRuns`, never loaded as history
  }
}

/**
 * Trimming at the terminal: the finished run's stream is rewritten with the handle's compact replay (its text
 * deltas of one model attempt as one event), so a finished run costs about its text in Redis.
 */
async function compact(ctx: RunContext, runId: string, handle: RunHandle): Promise<void> {
  const pairs: string[] = [];
  let deltas = 0;
  handle.events$.subscribe((event) => {
    if (event.type === 'text_delta' && event.fromSeq !== undefined && event.fromSeq < event.seq) deltas++;
    pairs.push(String(event.seq), eventJson(event));
  });
  if (deltas === 0) return; // nothing to merge
  await ctx.redis.lcCompact(ctx.keys.ns, runId, ...pairs).catch(() => undefined);
}

/** Queues the thread's next run when the terminal script made one the thread's. */
export async function next(ctx: Pick<RunContext, 'enqueue'>, result: (number | string)[]): Promise<void> {
  const [, runId, job] = result;
  if (typeof runId === 'string' && runId !== '' && typeof job === 'string' && job !== '') {
    await ctx.enqueue(runId, job);
  }
}

/**
 * The reason runs are cancelled with when Redis stayed unreachable for `eventStoreOutageMs`, or lost the run's
 * keys (a restart that kept nothing).
 */
export const EVENT_STORE_UNAVAILABLE_REASON = Object.freeze({ type: 'event_store_unavailable' as const });

/** The reason a worker cancels a run whose terminal another process stored (it was declared lost). */
export const RUN_ENDED_ELSEWHERE = Object.freeze({ type: 'run_ended_elsewhere' as const });

/**
 * A job this worker cannot start (no such agent, an input the engine refuses): `run_failed`
 * (`configuration_error`) without a model call.
 */
async function failAtStart(
  ctx: RunContext,
  local: LocalRun,
  data: RunJobData,
  mailbox: MirroredMailbox,
  error: { name: string; message: string; field?: string },
) {
  const at = Date.now();
  local.terminal = 'run_failed';
  local.ending = { stopReason: 'configuration_error' };
  ctx.ended(local, data);
  const base = { runId: local.runId, turn: 0, at };
  const started = { type: 'run_started', ...base, seq: 0, agent: data.agent };
  const undelivered = mailbox.peek().map((t) => ({ id: t.id, content: t.content }));
  const failed = { type: 'run_failed', ...base, seq: 1, error, stopReason: 'configuration_error', partial: [] };
  const json = JSON.stringify({ ...failed, undelivered, usage: ZERO_USAGE });
  const { redis, keys } = ctx;
  const back = undelivered.map((u) => JSON.stringify(signItem(ctx.auth, data.sessionId, u)));
  const owner = `${ctx.workerId}#${local.token ?? ''}`;
  const args = [keys.ns, local.runId, '1', json, 'running', owner, String(ctx.retainMs), '0'];
  await next(ctx, await redis.lcTerminal(...args, JSON.stringify(started), ...back));
}

/**
 * A command of a run this worker has, taken from the run's control hash (its tag checked, its command id taken
 * once: ./control-reader.ts): applied with `applyRunCommand`, answered when asked. One that comes before the run
 * started here waits for its start (a cancel is applied at the start).
 */
export function onRequest(ctx: RunContext, local: LocalRun, request: WorkerRequest & Envelope): void {
  const { handle, mailbox } = local;
  const { command } = request;
  const reply = (reply: WorkerReply) => void answer(ctx.redis, ctx.auth, ctx.keys, local.runId, request, reply);
  if (handle === undefined || mailbox === undefined) {
    if (command.op === 'cancel') {
      local.cancel = { reason: command.reason };
      local.mode = request.mode ?? 'cancel';
    } else local.waiting.push(request);
    return;
  }
  if (command.op === 'cancel' && !local.ended) local.mode = request.mode ?? 'cancel';
  // Steering of an ended run is in the thread's queue (or about to be): the caller routes it there again.
  if (local.ended && (command.op === 'steer' || command.op === 'withdraw')) return reply({ kind: 'not_here' });
  const result = applyRunCommand(
    {
      handle,
      terminal: () => local.terminal,
      steer: (text, id) => mailbox.pushItem(text, id ?? randomUUID()).id,
      withdraw: (steeringId) => mailbox.removeById(steeringId),
    },
    command,
  );
  reply({ kind: 'result', result });
}
