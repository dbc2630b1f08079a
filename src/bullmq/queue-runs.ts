import { randomUUID } from 'node:crypto';
import { Queue } from 'bullmq';
import { defer, from, switchMap, throwError, type Observable } from 'rxjs';
import { ConfigurationError } from '../errors.js';
import type { RunEvent } from '../events.js';
import type { Item } from '../items.js';
import { ZERO_USAGE } from '../items.js';
import {
  AgentNotFoundError,
  MailboxUnavailableError,
  NotSupportedError,
  RunNotFoundError,
  RunNotLiveError,
  ThreadBusyError,
} from '../runs/errors.js';
import { commandMethods, refusalError, type SendCommand } from '../runs/commands.js';
import { refusalOf, type RunCommand, type RunCommandResult } from '../control/command.js';
import { checkStart } from '../runs/check-start.js';
import { newInput, settle } from '../runs/new-input.js';
import type { LocalRunsSessionStore } from '../runs/thread.js';
import { traceCarrierOf } from '../runs/trace-carrier.js';
import type { RunPlace, Runs, StartedRun } from '../runs/types.js';
import { isInstance } from '../describe.js';
import { Channels } from './channels.js';
import { checkMs, checkName } from './checks.js';
import { openRedis, redisOptions, type RedisConnection } from './connection.js';
import { keysOf } from './keys.js';
import { readEvents } from './read-events.js';
import {
  Requests,
  signItem,
  type CancelMode,
  type WireItem,
  type WorkerReply,
  type WorkerRequest,
} from './requests.js';
import { withScripts } from './scripts.js';
import { DEFAULT_PREFIX, DEFAULT_RETAIN_FINISHED_MS, jobOptions, signJob, type RunJobData } from './shared.js';
import { QueueAuth, type QueueSecret } from './auth.js';
import { waitTerminal } from './wait-terminal.js';
import { queueResume } from './queue-resume.js';
import type { SuspensionKey } from '../control/seal.js';
import { failLost, type LostContext } from './worker-lost.js';
import { QueueHealth, redisAddress } from './queue-health.js';
import { next } from './worker-run.js';

/** Options of {@link queueRuns}. */
export interface QueueRunsOptions {
  /** Redis: a `redis://` URL or ioredis options. */
  readonly connection: RedisConnection;
  /** The BullMQ queue's name (the workers' `queue`). */
  readonly queue: string;
  /**
   * The key shared with the workers (a string or bytes, ≥ 32 bytes; docs/scale-out.md, "Trust boundary"): every
   * job, command and steering item this process writes is signed with it (HMAC-SHA256), and answers not signed
   * with it are ignored. Required unless `insecure: true`.
   */
  readonly secret?: QueueSecret;
  /** `true`: no `secret`, nothing signed — anyone who can write to the Redis controls the runs. */
  readonly insecure?: boolean;
  /** Where threads keep their history (the workers' store): input already in it is left out. Default: none. */
  readonly sessions?: LocalRunsSessionStore;
  /** Key prefix of loopctl's and BullMQ's keys (the workers' `prefix`). Default `'loopctl'`. */
  readonly prefix?: string;
  /** The agents the workers serve: another name is `AgentNotFoundError` at `start`. Default: any name. */
  readonly agents?: readonly string[];
  /** The session id (and thread key) of a principal's thread; the same default as `localRuns`. */
  readonly sessionId?: (threadId: string, principal: string) => string;
  /** How long `steer` / `withdraw` wait for the worker's mailbox (then `MailboxUnavailableError`). Default 2 000. */
  readonly steerTimeoutMs?: number;
  /** How long a finished run's events stay (a run cancelled while queued). Default 86 400 000 (24 h). */
  readonly retainFinishedMs?: number;
  /**
   * The workers' `runOptions.suspensionKey`, when they are given one: `resume` checks a suspension's seal with it.
   * Default: the key the workers derive from `secret` when they have none (docs/scale-out.md, "Approvals across
   * processes").
   */
  readonly suspensionKey?: SuspensionKey;
}

/** How often a waiting `cancel` checks whether the run's worker is gone (ms). */
const LOST_CHECK_MS = 500;

/** How long `close()` waits for its connections to close cleanly before it drops them (ms). */
const CLOSE_MS = 1000;

/** {@link Runs} over a BullMQ queue, and what it opened. */
export interface QueueRuns extends Runs {
  /**
   * Where the run is: `'waiting'` (queued, or waiting behind its thread's active run: no worker has taken it),
   * `'running'` or `'ended'`. `RunNotFoundError` as `events`; `QueueUnavailableError` while Redis does not answer.
   */
  state(runId: string, principal: string): Promise<RunPlace>;
  /**
   * Why the queue is unavailable now (its Redis connection closed, or a `PING` got no answer within 2 s), or
   * `undefined` while it answers. While it is unavailable every method (and `events` for a new reader) rejects
   * with `QueueUnavailableError` at once instead of waiting for Redis; an event stream already open stays open
   * and reads what it missed once Redis answers again.
   */
  readonly unavailable: string | undefined;
  /**
   * How many worker processes take runs from the queue now (BullMQ's count of its workers' connections, from
   * Redis's client list). `QueueUnavailableError` while Redis does not answer.
   */
  workers(): Promise<number>;
  /** Closes the connections it opened (live runs go on on their workers); within about 1 s even without Redis. */
  close(): Promise<void>;
}

/**
 * {@link Runs} whose runs are BullMQ jobs run by `startWorker` processes (docs/scale-out.md): the HTTP handler
 * runs on API processes unchanged. Each thread has at most one active run; `ifBusy`: `'steer'` (default: into
 * the live run's mailbox, wherever it runs), `'reject'` (`ThreadBusyError`), `'enqueue'` (runs after it),
 * `'interrupt'` (it is cancelled, its consistent prefix committed, then the new run runs), `'rollback'` (it is
 * cancelled and discarded). Events come from the run's Redis stream, resumable after any seq. Cancel reaches
 * the worker through loopctl's Redis pub/sub; a run still queued is cancelled here (`run_started`,
 * `run_cancelled{phase:'turn_entry'}`), never reaching a model. `stop` asks the run's worker to stop it
 * gracefully (`NotSupportedError` for a run no worker started yet); `decide` asks the run's worker to approve
 * or reject a call awaiting approval (`false` when none is; no answer in time: `MailboxUnavailableError`).
 * `start({ trace })` (the `traceparent` the HTTP handler read, or the one `instrumentRuns` passes) goes with
 * the job: the worker's run joins the caller's trace (docs/telemetry.md, "Context"). `resume` continues the
 * thread's suspended run (workers with `runOptions.approvals: 'suspend'`): the suspension the run's worker kept
 * in Redis (signed with `secret`, for `retainFinishedMs`), checked here, then resumed by a worker in a signed job;
 * each approved call runs at most once across resumes and workers (give the workers a session store).
 * @throws {ConfigurationError} for a bad option, naming it.
 */
export function queueRuns(options: QueueRunsOptions): QueueRuns {
  if (options === null || typeof options !== 'object') throw new ConfigurationError('options', 'must be an object');
  const connection = redisOptions(options.connection, 'options.connection');
  const queue = checkName(options.queue, 'options.queue');
  const prefix = checkName(options.prefix ?? DEFAULT_PREFIX, 'options.prefix');
  const auth = QueueAuth.of(options);
  const { sessions, agents } = options;
  if (sessions !== undefined && typeof sessions?.session !== 'function') {
    throw new ConfigurationError('options.sessions.session', 'must be a function');
  }
  if (agents !== undefined && !Array.isArray(agents))
    throw new ConfigurationError('options.agents', 'must be an array');
  const { suspensionKey } = options;
  if (suspensionKey !== undefined && typeof suspensionKey !== 'string' && !(suspensionKey instanceof Uint8Array)) {
    throw new ConfigurationError('options.suspensionKey', 'must be a string or a Uint8Array');
  }
  const steerTimeoutMs = checkMs(options.steerTimeoutMs ?? 2000, 'options.steerTimeoutMs', 1);
  const retainMs = checkMs(options.retainFinishedMs ?? DEFAULT_RETAIN_FINISHED_MS, 'options.retainFinishedMs', 1);
  const sessionId = options.sessionId ?? ((t, p) => `${encodeURIComponent(p)}/${encodeURIComponent(t)}`);
  const clientId = randomUUID();
  const keys = keysOf(prefix, queue);
  const redis = withScripts(openRedis(connection, `loopctl-api-${clientId}`));
  const channels = new Channels(connection, `loopctl-api-sub-${clientId}`);
  const requests = new Requests(redis, channels, keys, clientId, auth);
  const health = new QueueHealth(redis, redisAddress(connection));
  const bullQueue = new Queue<RunJobData>(queue, { connection, prefix });
  bullQueue.on('error', () => undefined);
  const enqueue = async (runId: string, job: string) =>
    void (await bullQueue.add('run', JSON.parse(job) as RunJobData, jobOptions(runId)));
  const lost: LostContext = { redis, keys, retainMs, enqueue, sessions };

  interface RunInfo {
    readonly principal: string;
    readonly state: string;
    readonly owner: string;
    readonly thread: string;
    readonly agent: string;
  }
  /** The principal's run, or RunNotFoundError: another principal's run does not exist for this one. */
  async function find(runId: unknown, principal: unknown): Promise<RunInfo> {
    if (typeof runId !== 'string' || runId === '') throw new RunNotFoundError(String(runId));
    health.check();
    const [p, state, owner, thread, agent] = await redis.hmget(
      keys.run(runId),
      'principal',
      'state',
      'owner',
      'thread',
      'agent',
    );
    if (p === null || p !== principal) throw new RunNotFoundError(runId);
    return { principal: p, state: state ?? 'ended', owner: owner ?? '', thread: thread ?? '', agent: agent ?? '' };
  }

  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

  /** Sends a cancel to wherever the run is; a run no worker took is cancelled here, without a model call. */
  async function sendCancel(runId: string, reason: unknown, mode: CancelMode): Promise<void> {
    for (;;) {
      const info = await redis.hmget(keys.run(runId), 'state', 'agent', 'thread');
      const [state, agent, thread] = info;
      if (state === 'running') {
        // Recorded in the run's control hash before its worker is woken: a lost wake-up is read on its poll.
        const command = reason === undefined ? { op: 'cancel' as const } : { op: 'cancel' as const, reason };
        return void (await requests.send({ runId, cid: randomUUID(), command, mode }));
      }
      if (state !== 'queued' && state !== 'pending') return;
      const at = Date.now();
      const steering = (await redis.lrange(keys.steering(thread ?? ''), 0, -1)).map((j) => JSON.parse(j) as WireItem);
      const base = { runId, turn: 0, at };
      const started = JSON.stringify({ type: 'run_started', ...base, seq: 0, agent: agent ?? '' });
      const cancelled = {
        type: 'run_cancelled',
        ...base,
        seq: 1,
        stopReason: 'cancelled',
        reason,
        phase: 'turn_entry',
        partial: [],
        undelivered: steering.map(({ id, content }) => ({ id, content })),
        usage: ZERO_USAGE,
      };
      const args = [keys.ns, runId, '1', jsonOf(cancelled), 'queued|pending', '', String(retainMs), '0', started];
      const result = await redis.lcTerminal(...args);
      if (result[0] === -2) continue; // a worker claimed it meanwhile: cancel it there
      if (result[0] === -1) return;
      await bullQueue.remove(runId).catch(() => 0); // a worker that takes it anyway finds it ended
      return next(lost, result);
    }
  }

  /**
   * Writes `run_failed` (`worker_lost`) for a running run whose worker is gone: its heartbeat expired (after
   * `lockDurationMs`), whether or not its connections are open (a frozen process keeps them). The terminal
   * script refuses it if the run ended.
   */
  async function endIfLost(runId: string): Promise<void> {
    const [state, owner] = await redis.hmget(keys.run(runId), 'state', 'owner');
    if (state !== 'running' || !owner) return;
    if ((await redis.exists(keys.alive(owner))) === 1) return;
    await failLost(lost, runId, owner);
  }

  /**
   * Steering into a run: the thread's Redis queue while no worker runs it, else the worker's mailbox (one steer
   * command per item, in order).
   */
  async function steerInto(runId: string, thread: string, items: readonly WireItem[]): Promise<string[]> {
    const deadline = Date.now() + steerTimeoutMs;
    const ids: string[] = [];
    let rest = items;
    const cids = items.map(() => randomUUID()); // one command id per item, kept when routed again
    while (rest.length > 0) {
      const signed = rest.map((i) => JSON.stringify(signItem(auth, thread, i)));
      const routed = await redis.lcSteerQueued(keys.ns, runId, ...signed);
      if (routed[0] === 'queued') return [...ids, ...rest.map((i) => i.id)];
      if (routed[0] === 'ended') throw new RunNotLiveError(runId);
      const [item] = rest;
      const command = { op: 'steer' as const, text: item!.content, id: item!.id };
      const cid = cids[items.length - rest.length]!;
      const reply = await ask({ runId, cid, command }, deadline);
      if (reply.kind === 'not_here') {
        await sleep(10); // it ended there: its terminal is being stored
        continue;
      }
      if (!reply.result.ok) throw refusalError(reply.result.error, runId);
      if (reply.result.op === 'steer') ids.push(reply.result.id);
      rest = rest.slice(1);
    }
    return ids;
  }

  /** Asks the run's worker until `deadline`; no answer by then is `MailboxUnavailableError` (never a guess). */
  async function ask(request: WorkerRequest, deadline: number): Promise<WorkerReply> {
    const left = deadline - Date.now();
    const reply = left > 0 ? await requests.ask(request, left) : undefined;
    if (reply === undefined) throw new MailboxUnavailableError(request.runId, steerTimeoutMs);
    return reply;
  }

  /**
   * Cancels the run and waits for its terminal event. Only the first cancel of a run claims it (one
   * `HSETNX` on its hash), so of concurrent cancels exactly one answers `true` (when the run ended
   * `run_cancelled`); each resolves once the terminal is out.
   */
  async function cancel(runId: string, reason: unknown): Promise<boolean> {
    const terminal = waitTerminal(redis, channels, keys, runId);
    try {
      await terminal.ready;
      const claimed = (await redis.eval(CLAIM_CANCEL, 1, keys.run(runId), randomUUID())) === 1;
      await sendCancel(runId, reason, 'cancel');
      // A worker that died with no other worker to notice: its run ends worker_lost here, so cancel returns.
      const watch = setInterval(() => void endIfLost(runId).catch(() => undefined), LOST_CHECK_MS);
      try {
        return (await terminal.type) === 'run_cancelled' && claimed;
      } finally {
        clearInterval(watch);
      }
    } finally {
      terminal.close();
    }
  }

  /** One command to the run's worker (stop, decide, cancel one tool call); `false` when no worker runs it. */
  async function askOwner(runId: string, command: RunCommand): Promise<RunCommandResult> {
    const reply = await ask({ runId, cid: randomUUID(), command }, Date.now() + steerTimeoutMs);
    if (reply.kind === 'result') return reply.result;
    return notTaken(command); // it ended there meanwhile
  }

  /** Sends a parsed command to wherever the run is (`applyRunCommand` runs it on the run's worker). */
  const send: SendCommand = async (runId, command, principal) => {
    const info = await find(runId, principal);
    switch (command.op) {
      case 'cancel':
        if (info.state === 'ended') return notTaken(command);
        return { ok: true, op: 'cancel', cancelled: await cancel(runId, command.reason) };
      case 'steer': {
        if (info.state === 'ended') throw new RunNotLiveError(runId);
        const [id] = await steerInto(runId, info.thread, [{ id: command.id ?? randomUUID(), content: command.text }]);
        return { ok: true, op: 'steer', id: id! };
      }
      case 'withdraw': {
        const deadline = Date.now() + steerTimeoutMs;
        const cid = randomUUID();
        for (;;) {
          const routed = await redis.lcWithdrawQueued(keys.ns, runId, command.steeringId);
          if (routed[0] !== 'live') return { ok: true, op: 'withdraw', withdrawn: routed[0] === 'removed' };
          const reply = await ask({ runId, cid, command }, deadline);
          if (reply.kind === 'result') return reply.result;
          await sleep(10);
        }
      }
      case 'stop':
        if (info.state === 'ended') return notTaken(command);
        if (info.state !== 'running') {
          throw new NotSupportedError('stop', 'a run no worker has started yet is not stopped gracefully: cancel it');
        }
        return askOwner(runId, command);
      case 'decide':
      case 'cancel_tool_call':
        // A run no worker has started has no call running or awaiting approval yet.
        if (info.state !== 'running') return notTaken(command);
        return askOwner(runId, command);
    }
  };

  /**
   * The ids the thread holds but its session may not yet: steering waiting in its queue, the input of its active
   * run and of the runs waiting behind it (so input sent again is not taken twice).
   */
  async function heldIds(threadKey: string): Promise<Set<string>> {
    const [steering, live, pending] = await Promise.all([
      redis.lrange(keys.steering(threadKey), 0, -1),
      redis.hget(keys.thread(threadKey), 'live'),
      redis.lrange(keys.pending(threadKey), 0, -1),
    ]);
    const held = new Set(steering.map((j) => (JSON.parse(j) as WireItem).id));
    const runs = [...(live ? [live] : []), ...pending];
    const lists = await Promise.all(runs.map((id) => redis.hget(keys.run(id), 'ids')));
    for (const list of lists) for (const id of JSON.parse(list ?? '[]') as string[]) held.add(id);
    return held;
  }

  async function start(req: Parameters<Runs['start']>[0], attempt = 0): Promise<StartedRun> {
    checkStart(req);
    if (req.frontendTools !== undefined && req.frontendTools.length > 0) {
      throw new NotSupportedError('frontendTools', 'a queued run cannot offer front-end tools yet');
    }
    if (agents !== undefined && !agents.includes(req.agent)) throw new AgentNotFoundError(req.agent);
    const ifBusy = req.ifBusy ?? 'steer';
    const threadKey = sessionId(req.threadId, req.principal);
    let input: string | readonly Item[] = req.input;
    if (typeof input !== 'string') {
      const history = sessions ? await settle((await sessions.session(threadKey)).load()) : [];
      const held = await heldIds(threadKey);
      input = newInput(input, history, (id) => held.has(id));
    }
    const runId = randomUUID();
    // The caller's trace context rides with the job (an invalid one is ignored whole, as the W3C asks).
    const trace = traceCarrierOf(req.trace?.traceparent, req.trace?.tracestate);
    const job = signJob(auth, { runId, agent: req.agent, sessionId: threadKey, input, ...(trace ? { trace } : {}) });
    const ids = typeof input === 'string' ? [] : input.flatMap((i) => (i.type === 'tool_result' ? [] : [i.id]));
    const fields = ['principal', req.principal, 'agent', req.agent, 'thread', threadKey, 'job', JSON.stringify(job)];
    const empty = typeof input !== 'string' && input.length === 0;
    if (empty && ifBusy !== 'steer')
      throw new ConfigurationError('input', 'holds no item the thread does not already hold');
    const admit = empty
      ? ['busy-check']
      : await redis.lcAdmit(keys.ns, runId, threadKey, ifBusy, ...fields, 'ids', JSON.stringify(ids));
    // A run starts on the thread (now or after its live one): the thread's kept suspension is stale.
    if (admit[0] === 'start' || admit[0] === 'pending') await redis.del(keys.suspension(threadKey));
    if (admit[0] === 'start') {
      await bullQueue.add('run', job, jobOptions(runId));
      return { runId };
    }
    if (admit[0] === 'pending') {
      if (ifBusy === 'interrupt' || ifBusy === 'rollback') {
        const reason = { type: ifBusy === 'interrupt' ? 'interrupted' : 'rolled_back', by: runId };
        await sendCancel(admit[1]!, reason, ifBusy);
      }
      return { runId };
    }
    const live = admit[0] === 'busy' ? admit[1]! : ((await redis.hget(keys.thread(threadKey), 'live')) ?? '');
    if (ifBusy === 'reject') throw new ThreadBusyError(req.threadId, live);
    const items = steeringItems(input);
    if (live === '') throw new ConfigurationError('input', 'holds no item the thread does not already hold');
    try {
      const steered = await steerInto(live, threadKey, items);
      return { runId: live, steeringId: steered[steered.length - 1]! };
    } catch (error) {
      // The active run ended meanwhile: the thread is free, so this is a start again.
      if (isInstance(error, RunNotLiveError) && attempt < 3) return start(req, attempt + 1);
      throw error;
    }
  }

  const resume = queueResume({
    redis,
    keys,
    auth,
    sessions,
    agents,
    sessionId,
    suspensionKey,
    heldIds,
    add: async (runId, job) => void (await bullQueue.add('run', job, jobOptions(runId))),
  });

  return {
    start: (req) => health.guard(() => start(req)),

    resume: (req) => health.guard(() => resume(req)),

    events(runId, opts): Observable<RunEvent> {
      return defer(() => {
        const afterSeq = opts?.afterSeq;
        if (afterSeq !== undefined && (!Number.isInteger(afterSeq) || afterSeq < -1)) {
          return throwError(() => new ConfigurationError('afterSeq', 'must be an integer ≥ -1'));
        }
        // A new reader is refused at once during an outage; an open one stays and reads what it missed once
        // Redis answers again (docs/scale-out.md, "Failure semantics").
        return from(health.guard(() => find(runId, opts?.principal))).pipe(
          switchMap(() => readEvents(redis, channels, keys, runId, afterSeq)),
        );
      });
    },

    ...commandMethods((runId, command, principal) => health.guard(() => send(runId, command, principal))),

    async state(runId, principal) {
      const { state } = await health.guard(() => find(runId, principal));
      return state === 'queued' || state === 'pending' ? 'waiting' : state === 'running' ? 'running' : 'ended';
    },

    get unavailable() {
      return health.down;
    },

    workers: () => health.guard(() => bullQueue.getWorkersCount()),

    async close() {
      health.close();
      requests.close();
      channels.close();
      // Without Redis a clean close would wait for it: after CLOSE_MS the connections are dropped.
      const within = (work: Promise<unknown>) =>
        Promise.race([work.catch(() => undefined), new Promise((resolve) => setTimeout(resolve, CLOSE_MS).unref())]);
      await within(bullQueue.close());
      await bullQueue.disconnect().catch(() => undefined);
      await within(redis.quit());
      redis.disconnect();
    },
  };
}

/** The answer of a command that took no effect (the run ended, or no worker runs it yet). */
function notTaken(command: RunCommand): RunCommandResult {
  switch (command.op) {
    case 'cancel':
    case 'cancel_tool_call':
      return { ok: true, op: command.op, cancelled: false };
    case 'stop':
      return { ok: true, op: 'stop', stopped: false };
    case 'withdraw':
      return { ok: true, op: 'withdraw', withdrawn: false };
    case 'decide':
      return { ok: true, op: 'decide', decided: false };
    case 'steer':
      return { ok: false, op: 'steer', error: refusalOf(new RunNotLiveError('')) };
  }
}

/**
 * claimCancel: KEYS run hash, ARGV token. The first cancel of a live run claims it → 1; any later one → 0 (and
 * a hash that expired is not made again).
 */
const CLAIM_CANCEL = `
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
if redis.call('HGET', KEYS[1], 'state') == 'ended' then return 0 end
return redis.call('HSETNX', KEYS[1], 'cancelClaim', ARGV[1])
`;

/** The steering a start on a busy thread pushes: the text, or each user Item keeping its id. */
function steeringItems(input: string | readonly Item[]): WireItem[] {
  if (typeof input === 'string') return [{ id: randomUUID(), content: input }];
  if (input.length === 0) throw new ConfigurationError('input', 'holds no item the thread does not already hold');
  const other = input.find((item) => item.type !== 'user');
  if (other) throw new ConfigurationError('input', `only user messages can steer a live run, not a ${other.type} item`);
  return input.flatMap((item) => (item.type === 'user' ? [{ id: item.id, content: item.text }] : []));
}

/** JSON text of an event built here (a cancel reason with no JSON form is described). */
function jsonOf(event: { reason: unknown }): string {
  try {
    return JSON.stringify(event);
  } catch {
    return JSON.stringify({ ...event, reason: '[unprintable reason]' });
  }
}
