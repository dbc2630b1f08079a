import { randomUUID } from 'node:crypto';
import { lastValueFrom } from 'rxjs';
import { toLastValue } from '../last-value.js';
import { Queue, Worker, type Job } from 'bullmq';
import type { Agent, RunOptions } from '../engine/types.js';
import { ConfigurationError } from '../errors.js';
import type { LocalRunsSessionStore } from '../runs/thread.js';
import { DEFAULTS } from '../defaults.js';
import { Channels } from './channels.js';
import { openRedis, redisOptions, type RedisConnection } from './connection.js';
import { keysOf } from './keys.js';
import { signItem, steerParts, type WireItem } from './requests.js';
import { CONTROL_POLL_MS, controlReader } from './control-reader.js';
import { withScripts } from './scripts.js';
import { checkJob, DEFAULT_PREFIX, DEFAULT_RETAIN_FINISHED_MS, jobOptions, type RunJobData } from './shared.js';
import { QueueAuth, QueueAuthError, type QueueSecret } from './auth.js';
import {
  discardJournal,
  EVENT_STORE_UNAVAILABLE_REASON,
  execute,
  newLocalRun,
  type LocalRun,
  type RunContext,
} from './worker-run.js';
import { failLost, fenceLost, lostCallsNote } from './worker-lost.js';
import { checkCount, checkMs, checkName } from './checks.js';

/** Options of {@link startWorker}. Times in ms. */
export interface StartWorkerOptions {
  /** Redis: a `redis://` URL or ioredis options. */
  readonly connection: RedisConnection;
  /** The BullMQ queue's name (the same as `queueRuns`'). */
  readonly queue: string;
  /**
   * The key shared with `queueRuns` (a string or bytes, ≥ 32 bytes; docs/scale-out.md, "Trust boundary"): the
   * worker runs only jobs signed with it, on the thread the signed job names, and applies only commands signed
   * with it, each command id once. Required unless `insecure: true`.
   */
  readonly secret?: QueueSecret;
  /** `true`: no `secret`, nothing is checked — anyone who can write to the Redis controls the runs. */
  readonly insecure?: boolean;
  /** The agents this worker runs, by the name `start({ agent })` gives. */
  readonly agents: Readonly<Record<string, Agent<any>>>;
  /** Where threads keep their history (shared with the API processes: Postgres, for one). Default: none. */
  readonly sessions?: LocalRunsSessionStore;
  /** Key prefix of loopctl's and BullMQ's keys (the same as `queueRuns`'). Default `'loopctl'`. */
  readonly prefix?: string;
  /** Runs at once in this process. Default 10. */
  readonly concurrency?: number;
  /** BullMQ's job lock, and the worker's heartbeat: a worker silent this long is lost. Default 30 000. */
  readonly lockDurationMs?: number;
  /** How often stalled jobs are looked for. Default 30 000. */
  readonly stalledIntervalMs?: number;
  /** SIGTERM drain (`close()`): how long runs may go on before they are cancelled. Default 25 000. */
  readonly shutdownGraceMs?: number;
  /**
   * A run whose worker died: `'fail'` (`run_failed`, `worker_lost`), `'retry_once'` (rerun from the last
   * commit), or `'continue'` (docs/scale-out.md, "Continuing a lost run"): runs journal each turn in `sessions`,
   * and a lost run is continued from its last journalled turn on another worker (`resumeRun`: same run id,
   * `run_resumed` in its stream), up to {@link MAX_CONTINUES} times; a run with no journalled turn, or a store
   * without a journal, is rerun as `'retry_once'` does. Every worker of a queue must have the same value.
   */
  readonly onWorkerLost?: 'fail' | 'retry_once' | 'continue';
  /**
   * Redis unreachable mid-run (no heartbeat stored this long): events are buffered, then the live runs are
   * cancelled (reason `{ type: 'event_store_unavailable' }`). Must be shorter than `lockDurationMs`, so a worker
   * cut off cancels its runs before its peers may declare it lost. Default two thirds of `lockDurationMs`
   * (20 000).
   */
  readonly eventStoreOutageMs?: number;
  /** How long a finished run's events stay in Redis. Default 86 400 000 (24 h). */
  readonly retainFinishedMs?: number;
  /**
   * Called once when this worker claims a run (`claimed`) and once when the run's terminal event is emitted here
   * (`ended`: its type, stop reason and, for a cancel, the reason; stored after): a line per run for an
   * operator's log (`loopctl worker` prints them). A throw is ignored.
   */
  readonly onRun?: (note: WorkerRunNote) => void;
  /**
   * Options every run starts with (deadlines, hooks, retry…); the mailbox, session and ids are the worker's, and
   * `trace` is the job's (the caller's W3C trace context): with `telemetry: withTelemetry()` of `loopctl/otel`
   * each run's `invoke_agent` span joins the trace of the request that started it (docs/telemetry.md, "Context").
   */
  readonly runOptions?: Omit<RunOptions<any>, 'mailbox' | 'session' | 'steer$' | 'idGenerator' | 'trace'>;
}

/** What {@link StartWorkerOptions.onRun} is told about a run of this worker. */
export type WorkerRunNote =
  | { readonly type: 'claimed'; readonly runId: string; readonly agent: string }
  | {
      readonly type: 'ended';
      readonly runId: string;
      readonly agent: string;
      readonly terminal: 'run_completed' | 'run_cancelled' | 'run_failed';
      readonly stopReason: string;
      readonly reason?: unknown;
    };

/** A running worker (see {@link startWorker}). */
export interface QueueWorker {
  /** This worker's id (a run's `owner` in Redis). */
  readonly id: string;
  /** Runs live in this process now. */
  readonly live: number;
  /**
   * Graceful shutdown (SIGTERM): stops taking jobs; each live run gets `stop({ at: 'turn_end', graceMs })`
   * where the handle has it (run control), else it goes on and is cancelled (reason `{ type: 'worker_shutdown' }`)
   * after `shutdownGraceMs`; resolves once every run's terminal event is stored and the connections are closed.
   */
  close(): Promise<void>;
}

/**
 * How many times a run is continued after a lost worker (`onWorkerLost: 'continue'`): a run whose workers keep
 * dying (a turn that crashes its process) then ends `run_failed` (`worker_lost`).
 */
export const MAX_CONTINUES = 5;

/** How long after `shutdownGraceMs` a draining worker cancels a run that a graceful stop did not end (ms). */
const STOP_BACKSTOP_MS = 1000;

/** The reason a draining worker cancels the runs still live after `shutdownGraceMs`. */
export const WORKER_SHUTDOWN_REASON = Object.freeze({ type: 'worker_shutdown' as const });
export { EVENT_STORE_UNAVAILABLE_REASON } from './worker-run.js';

/**
 * Starts a worker process's part of `loopctl/bullmq` (docs/scale-out.md): takes run jobs off the BullMQ queue,
 * runs them with the engine, appends each event to the run's Redis stream (the terminal one by a script that
 * refuses a second: "exactly one terminal event"), and answers cancel and steering requests for its runs on its
 * own pub/sub channel. A job whose worker died (stalled, heartbeat expired) ends `run_failed` (`worker_lost`)
 * or is rerun once (`onWorkerLost: 'retry_once'`). Resolves once it listens and takes jobs.
 * @throws {ConfigurationError} for a bad option, naming it.
 */
export async function startWorker(options: StartWorkerOptions): Promise<QueueWorker> {
  if (options === null || typeof options !== 'object') throw new ConfigurationError('options', 'must be an object');
  const connection = redisOptions(options.connection, 'options.connection');
  const queue = checkName(options.queue, 'options.queue');
  const prefix = checkName(options.prefix ?? DEFAULT_PREFIX, 'options.prefix');
  const auth = QueueAuth.of(options);
  const { agents, sessions } = options;
  if (agents === null || typeof agents !== 'object')
    throw new ConfigurationError('options.agents', 'must be an object');
  if (sessions !== undefined && typeof sessions?.session !== 'function') {
    throw new ConfigurationError('options.sessions.session', 'must be a function');
  }
  const concurrency = checkCount(options.concurrency ?? 10, 'options.concurrency');
  const lockDurationMs = checkMs(options.lockDurationMs ?? 30_000, 'options.lockDurationMs', 1);
  const stalledIntervalMs = checkMs(options.stalledIntervalMs ?? 30_000, 'options.stalledIntervalMs', 1);
  const shutdownGraceMs = checkMs(options.shutdownGraceMs ?? 25_000, 'options.shutdownGraceMs', 0);
  const outageMs = selfCancelMs(options.eventStoreOutageMs, lockDurationMs);
  const retainMs = checkMs(options.retainFinishedMs ?? DEFAULT_RETAIN_FINISHED_MS, 'options.retainFinishedMs', 1);
  const onWorkerLost = options.onWorkerLost ?? 'fail';
  if (onWorkerLost !== 'fail' && onWorkerLost !== 'retry_once' && onWorkerLost !== 'continue') {
    throw new ConfigurationError('options.onWorkerLost', "must be 'fail', 'retry_once' or 'continue'");
  }
  const runOptions = checkRunOptions(options.runOptions);
  if (options.onRun !== undefined && typeof options.onRun !== 'function') {
    throw new ConfigurationError('options.onRun', 'must be a function');
  }
  const note = (n: WorkerRunNote) => {
    try {
      options.onRun?.(n);
    } catch {
      // an operator's log line never stops a run
    }
  };
  const id = randomUUID();
  const keys = keysOf(prefix, queue);
  const redis = withScripts(openRedis(connection, `loopctl-worker-${id}`));
  const channels = new Channels(connection, `loopctl-worker-sub-${id}`);
  const bullQueue = new Queue(queue, { connection, prefix });
  bullQueue.on('error', () => undefined);
  const live = new Map<string, LocalRun>();
  const ctx: RunContext = {
    redis,
    keys,
    auth,
    workerId: id,
    agents,
    sessions,
    runOptions,
    retainMs,
    continueRuns: onWorkerLost === 'continue',
    leasePatienceMs: DEFAULTS.session.leaseTtlMs + lockDurationMs,
    ended: (run, data) => {
      if (run.terminal === undefined || run.ending === undefined) return;
      note({ type: 'ended', runId: data.runId, agent: data.agent, terminal: run.terminal, ...run.ending });
    },
    enqueue: async (runId, job) => void (await bullQueue.add('run', JSON.parse(job) as RunJobData, jobOptions(runId))),
  };

  // Heartbeat: a worker whose key expired is lost (its runs' jobs stalled, nobody renews them). The key of a
  // beat sent at t lives until at least t + lockDurationMs, so peers cannot find it gone before then.
  let lastBeat = Date.now();
  const beat = () => {
    const sent = Date.now();
    return redis.set(keys.alive(id), '1', 'PX', lockDurationMs).then(
      () => {
        lastBeat = Math.max(lastBeat, sent);
        void lostKeys();
      },
      () => undefined,
    );
  };
  // A run whose hash Redis lost (a restart that kept nothing, a flush) cannot go on: cancelled with a typed
  // reason, its terminal stored alone (./scripts.ts, terminal) so readers find it. Checked at each heartbeat,
  // so a run in a long tool call, which appends nothing, is found too.
  const lostKeys = async () => {
    const runs = [...live.values()].filter((run) => run.handle !== undefined && !run.ended);
    if (runs.length === 0) return;
    const found = await Promise.all(runs.map((run) => redis.exists(keys.run(run.runId)).catch(() => 1)));
    runs.forEach((run, i) => {
      if (found[i] === 0 && !run.ended) cancelRun(run, EVENT_STORE_UNAVAILABLE_REASON);
    });
  };
  await beat();
  const heartbeat = setInterval(beat, Math.max(1, Math.floor(lockDurationMs / 6)));

  // Cut off from Redis (closed, or a connection that hangs): once no beat was stored for eventStoreOutageMs
  // (shorter than lockDurationMs), the live runs are cancelled — strictly before peers may declare this worker
  // lost, so a run declared lost elsewhere is not finished here. Their terminals are stored when Redis answers.
  const watchdog = setInterval(
    () => {
      if (Date.now() - lastBeat < outageMs) return;
      for (const run of live.values()) if (!run.ended) cancelRun(run, EVENT_STORE_UNAVAILABLE_REASON);
    },
    Math.max(1, Math.min(250, Math.floor(outageMs / 4))),
  );

  // Control is state: a wake-up (or anything on the channel) only says "read the run's control hash"; the
  // hashes of the live runs are read again when the subscriber reconnects and every CONTROL_POLL_MS.
  const control = controlReader(ctx, live);
  await channels.listen(keys.workerChannel(id), (message) => {
    try {
      const wake = (JSON.parse(message) as { wake?: unknown } | null)?.wake;
      if (typeof wake === 'string') void control.read([wake]);
    } catch {
      // nothing a message says may stop the worker
    }
  });
  channels.onReconnect(() => void control.read([...live.keys()]));
  const poll = setInterval(() => {
    if (live.size > 0) void control.read([...live.keys()]);
  }, CONTROL_POLL_MS);

  // A job not signed with the secret fails (QueueAuthError, BullMQ's failedReason) before anything runs.
  const process = async (job: Job<RunJobData>): Promise<void> => {
    const data = job.data;
    checkJob(auth, job.id, data);
    const mine = live.get(data.runId);
    if (mine !== undefined) return mine.done; // this worker's own job, picked up again after a stall
    const run = newLocalRun(data.runId);
    live.set(data.runId, run);
    try {
      await claimAndRun(run, data);
    } finally {
      live.delete(data.runId);
      run.settle();
    }
  };

  async function claimAndRun(run: LocalRun, data: RunJobData): Promise<void> {
    for (;;) {
      const claim = await redis.lcClaim(keys.ns, data.runId, id, data.sessionId);
      if (claim[0] === 'mismatch') {
        throw new QueueAuthError('thread_mismatch', `the run's state names another thread than its signed job`);
      }
      if (claim[0] === 'claimed') {
        note({ type: 'claimed', runId: data.runId, agent: data.agent });
        void control.read([data.runId]); // commands recorded while it was queued
        return execute(ctx, run, data, await signedItems(data, claim.slice(2)), 0, claim[1]!);
      }
      if (claim[0] === 'ended') return discardEnded(data);
      if (claim[0] !== 'owned') return;
      const owner = claim[1]!;
      // Another worker runs it: wait while it lives (its lock may have lapsed in a Redis outage).
      const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
      // Lost: its heartbeat expired, seen twice half a lock apart (after an outage the owner needs a moment to
      // beat again). Liveness is the heartbeat alone, never an open connection: a frozen process (SIGSTOP, a
      // tool that blocks the event loop) keeps its sockets, and its subscription, open.
      const gone = async () => (await redis.exists(keys.alive(owner))) === 0;
      while ((await redis.hget(keys.run(data.runId), 'state')) === 'running') {
        if ((await gone()) && (await pause(lockDurationMs / 2), await gone())) break;
        await pause(Math.min(250, lockDurationMs));
      }
      if ((await redis.hget(keys.run(data.runId), 'state')) !== 'running') return discardEnded(data);
      // Fenced first: after it, the lost claim's session commit either stored (the run completed) or never will.
      const commit = await fenceLost(ctx, data.runId, owner).catch(() => 'unreachable' as const);
      if (commit === 'unreachable') {
        await pause(Math.min(1000, lockDurationMs)); // the store did not answer: no verdict without it
        continue;
      }
      if (commit === 'moved') continue;
      const retries = Number((await redis.hget(keys.run(data.runId), 'retries')) ?? 0);
      // 'continue': from the run's journal when it has a turn to go on from (a resume job is rerun instead).
      const journalled =
        commit !== 'committed' && onWorkerLost === 'continue' && retries < MAX_CONTINUES && !data.resume
          ? await continuable(data).catch(() => false)
          : false;
      if (journalled) {
        const [requeued, lastSeq] = await redis.lcRequeue(keys.ns, data.runId, owner);
        if (requeued !== 1) continue;
        const again = await redis.lcClaim(keys.ns, data.runId, id, data.sessionId);
        if (again[0] !== 'claimed') continue;
        note({ type: 'claimed', runId: data.runId, agent: data.agent });
        void control.read([data.runId]);
        const items = await signedItems(data, again.slice(2));
        return execute(ctx, run, data, items, (lastSeq ?? -1) + 1, again[1]!, true);
      }
      const rerun = onWorkerLost === 'retry_once' || (onWorkerLost === 'continue' && !journalled);
      if (commit !== 'committed' && rerun && retries < 1) {
        const callsNote = await lostCallsNote(ctx, data.runId).catch(() => undefined);
        const [requeued, lastSeq] = await redis.lcRequeue(keys.ns, data.runId, owner);
        if (requeued !== 1) continue;
        // The calls the lost claim started are told to the rerun's model, first of its steering.
        const told = callsNote && signItem(auth, data.sessionId, { id: randomUUID(), content: callsNote });
        if (told) await redis.lpush(keys.steering(data.sessionId), JSON.stringify(told));
        const again = await redis.lcClaim(keys.ns, data.runId, id, data.sessionId);
        if (again[0] !== 'claimed') continue;
        note({ type: 'claimed', runId: data.runId, agent: data.agent });
        void control.read([data.runId]);
        const items = await signedItems(data, again.slice(2));
        return execute(ctx, run, data, items, (lastSeq ?? -1) + 1, again[1]!);
      }
      return failLost(ctx, data.runId, owner, commit);
    }
  }

  /**
   * The job's run has its terminal: its journal (`'continue'`), if any, is done with. The worker that stored the
   * terminal discards it just after; one killed in between left it behind, and the peer that takes its stalled
   * job (or watched it end) discards it here. Idempotent; an error is ignored.
   */
  async function discardEnded(data: RunJobData): Promise<void> {
    if (onWorkerLost === 'continue') await discardJournal(ctx, data.sessionId, data.runId);
  }

  /** True when the run's journal has a turn to go on from (a store without a journal: false). */
  async function continuable(data: RunJobData): Promise<boolean> {
    if (sessions === undefined) return false;
    const session = await sessions.session(data.sessionId);
    if (typeof session.readJournal !== 'function') return false;
    const journal = await lastValueFrom(toLastValue(session.readJournal(data.runId)));
    if (journal === undefined || journal.sealed) return false;
    return journal.turns[0]?.turn === 1 || journal.pending?.turn === 1;
  }

  /**
   * The steering a claim moved into the run's mailbox, signed for the job's thread; an item whose tag does not
   * match (written to Redis by someone without the secret) is dropped from the mailbox hash, never delivered.
   */
  async function signedItems(data: RunJobData, claimed: readonly string[]): Promise<WireItem[]> {
    const items = claimed.map((json) => JSON.parse(json) as WireItem);
    const valid = (i: WireItem) => auth.verify(steerParts(data.sessionId, i.id, i.content), i.mac) === undefined;
    const forged = items.filter((i) => !valid(i));
    if (forged.length > 0) await redis.hdel(keys.mailbox(data.runId), ...forged.map((i) => i.id));
    return items.filter(valid);
  }

  const worker = new Worker<RunJobData>(queue, process, {
    connection,
    prefix,
    concurrency,
    lockDuration: lockDurationMs,
    stalledInterval: stalledIntervalMs,
    maxStalledCount: 2,
    autorun: false,
  });
  worker.on('error', () => undefined); // a lock lost in an outage: the run's state in Redis decides
  worker.on('failed', () => undefined);
  void worker.run().catch(() => undefined);
  await worker.waitUntilReady();

  function cancelRun(run: LocalRun, reason: unknown): void {
    if (run.handle) run.handle.cancel(reason);
    else run.cancel ??= { reason };
  }

  let closing: Promise<void> | undefined;
  return {
    id,
    get live() {
      return live.size;
    },
    close() {
      closing ??= (async () => {
        const closed = worker.close(); // takes no new job; waits for the active ones
        const timers: ReturnType<typeof setTimeout>[] = [];
        for (const run of live.values()) {
          // Run control's graceful stop at the end of the turn (it cancels itself after graceMs, reason
          // stop_timeout); the cancel below is the backstop for a run not started yet (no handle).
          run.handle?.stop({ at: 'turn_end', graceMs: shutdownGraceMs });
          const after = run.handle ? shutdownGraceMs + STOP_BACKSTOP_MS : shutdownGraceMs;
          const timer = setTimeout(() => cancelRun(run, WORKER_SHUTDOWN_REASON), after);
          timers.push(timer);
          void run.done.then(() => clearTimeout(timer));
        }
        await closed;
        timers.forEach(clearTimeout);
        clearInterval(heartbeat);
        clearInterval(poll);
        clearInterval(watchdog);
        await redis.del(keys.alive(id)).catch(() => undefined);
        channels.close();
        await bullQueue.close().catch(() => undefined);
        await redis.quit().catch(() => undefined);
      })();
      return closing;
    },
  };
}

/**
 * The self-cancel deadline (`eventStoreOutageMs`): given, it must be shorter than `lockDurationMs` (peers may
 * declare the worker lost once its heartbeat, renewed every `lockDurationMs / 6`, is `lockDurationMs` old);
 * default two thirds of `lockDurationMs`.
 * @throws {ConfigurationError} `options.eventStoreOutageMs` not a time, or not shorter than `lockDurationMs`.
 */
function selfCancelMs(given: unknown, lockDurationMs: number): number {
  if (given === undefined) return Math.floor((lockDurationMs * 2) / 3);
  const ms = checkMs(given, 'options.eventStoreOutageMs', 0);
  if (ms >= lockDurationMs) {
    throw new ConfigurationError(
      'options.eventStoreOutageMs',
      `must be shorter than options.lockDurationMs (${lockDurationMs} ms; got ${ms}): a worker cancels its runs ` +
        'before its peers may declare it lost',
    );
  }
  return ms;
}

/**
 * `runOptions` checked where a mistake would otherwise fail every run: an object; `telemetry` a `RunTelemetry`
 * (`withTelemetry()`); no `trace` (each job carries its caller's). The engine checks the rest at each start.
 */
function checkRunOptions(value: StartWorkerOptions['runOptions']): NonNullable<StartWorkerOptions['runOptions']> {
  if (value === undefined) return {};
  if (value === null || typeof value !== 'object') {
    throw new ConfigurationError('options.runOptions', 'must be an object');
  }
  const { telemetry } = value;
  if (telemetry !== undefined && typeof (telemetry as { open?: unknown } | null)?.open !== 'function') {
    const why = 'must be a RunTelemetry (with open(), e.g. withTelemetry())';
    throw new ConfigurationError('options.runOptions.telemetry', why);
  }
  if ((value as { trace?: unknown }).trace !== undefined) {
    throw new ConfigurationError('options.runOptions.trace', "is each job's own (the caller's trace context)");
  }
  return value;
}
