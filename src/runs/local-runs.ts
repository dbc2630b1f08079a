import { defer, throwError, type Observable, type SchedulerLike } from 'rxjs';
import { applyRunCommand, type CommandTarget } from '../control/apply.js';
import { checkDurationMs } from '../duration.js';
import { ConfigurationError } from '../errors.js';
import type { RunEvent, TerminalEvent } from '../events.js';
import { isTerminalEvent } from '../events.js';
import type { Item } from '../items.js';
import type { Suspended } from '../control/suspended.js';
import type { Agent, RunHandle, RunOptions } from '../engine/types.js';
import { resume } from '../engine/resume.js';
import { start } from '../engine/start.js';
import type { FrontendTool } from '../tools/frontend-tool.js';
import { commandMethods, type SendCommand } from './commands.js';
import { clockOf, Expiry } from './expiry.js';
import { eventsAfter } from './compact.js';
import { AgentNotFoundError, NotSupportedError, RunNotFoundError, RunNotLiveError, ThreadBusyError } from './errors.js';
import { checkStart } from './check-start.js';
import { newInput, settle } from './new-input.js';
import { ThreadState, type LocalRunsSessionStore } from './thread.js';
import type { ResumeRunRequest, Runs, StartRunRequest, StartedRun } from './types.js';

/** Options of {@link localRuns}. */
export interface LocalRunsOptions {
  /** The agents runs may start, by the name `start({ agent })` gives. */
  readonly agents: Readonly<Record<string, Agent<any>>>;
  /**
   * Where threads keep their history: `session(id)` gives the thread's Session (any store with that method
   * fits, sync or async). Without one, each thread gets a `MemorySession` of its own, kept in memory.
   */
  readonly sessions?: LocalRunsSessionStore;
  /**
   * The session id of a principal's thread. Default: `encodeURIComponent(principal) + '/' +
   * encodeURIComponent(threadId)`, so two principals never share a thread's history.
   */
  readonly sessionId?: (threadId: string, principal: string) => string;
  /**
   * How long an ended run stays readable (`events()`, and commands answering `false`) after its terminal
   * event, in ms; then it is forgotten (`RunNotFoundError`). An integer from 1 to 2³¹−1. Default 600 000
   * (10 minutes): a client re-attaching after a dropped connection finds its run.
   */
  readonly retainFinishedMs?: number;
  /**
   * A memory cap on top of `retainFinishedMs`: at most this many ended runs are kept, the oldest forgotten
   * first. Default: no cap (only time forgets). A non-negative integer.
   */
  readonly retainFinishedRuns?: number;
  /**
   * How long a thread with no live run is kept after its last use, in ms; then it is forgotten with what
   * it holds in memory: its mailbox (steering given back by a cancelled run) and, without `sessions`, its
   * `MemorySession` history (the next start on it begins an empty history: give a `sessions` store to keep
   * histories). An integer from 1 to 2³¹−1. Default 3 600 000 (1 hour).
   */
  readonly retainIdleThreadsMs?: number;
  /**
   * The scheduler retention reads the time from and arms its timer on. Default: the wall clock, with a
   * timer that never keeps the process alive. A test gives a virtual one to pass time at once.
   */
  readonly scheduler?: SchedulerLike;
  /** Options every run starts with (deadlines, hooks, a shutdown `signal`…); the thread's mailbox and session win. */
  readonly runOptions?: Omit<RunOptions<any>, 'mailbox' | 'session' | 'steer$' | 'control'>;
}

/**
 * How `start` replays events to late subscribers: `'compact'`, text deltas kept as one event per model
 * attempt ("start() memory on long runs"), resumable at any seq through `eventsAfter`.
 */
const REPLAY_OPTIONS = { replay: 'compact' } as const;

interface RunRecord {
  readonly runId: string;
  readonly principal: string;
  readonly thread: ThreadState;
  readonly threadKey: string;
  readonly handle: RunHandle;
  terminal?: TerminalEvent;
}

/** Default of `retainFinishedMs`: 10 minutes. */
export const DEFAULT_LOCAL_RETAIN_FINISHED_MS = 600_000;
/** Default of `retainIdleThreadsMs`: 1 hour. */
export const DEFAULT_RETAIN_IDLE_THREADS_MS = 3_600_000;

/**
 * {@link Runs} in this process: each principal's thread has one `Mailbox` (its steering, kept across runs:
 * "give back to the front") and one Session, and at most one live run ("one run per mailbox and session").
 * `ifBusy`: `'steer'` (default) and `'reject'`; the others reject with `NotSupportedError`. `stop` is the
 * run's graceful stop (`handle.stop`, docs/run-control.md). `decide` approves or rejects a call awaiting
 * approval in the run ("Approvals", docs/run-control.md): `true` when it was awaiting one. `resume` continues the
 * thread's suspended run (`runOptions.approvals: 'suspend'`; give `runOptions.suspensionKey` for a suspension
 * kept across processes); the thread keeps its last run's suspension until a new run starts on it. Runs are
 * started with `start()`, so they run whether or not anyone reads their events, until they end or are
 * cancelled.
 *
 * @example
 * const runs = localRuns({ agents: { helper: agent } });
 * const { runId } = await runs.start({ agent: 'helper', threadId: 't1', input: 'hi', principal: 'me' });
 * runs.events(runId, { principal: 'me' }).subscribe(render);
 * @throws {ConfigurationError} for a bad option, naming it.
 */
export function localRuns(options: LocalRunsOptions): Runs {
  if (options === null || typeof options !== 'object') throw new ConfigurationError('options', 'must be an object');
  const { agents, sessions, runOptions = {} } = options;
  if (agents === null || typeof agents !== 'object')
    throw new ConfigurationError('options.agents', 'must be an object');
  if (sessions !== undefined && typeof sessions?.session !== 'function') {
    throw new ConfigurationError('options.sessions.session', 'must be a function');
  }
  const cap = options.retainFinishedRuns ?? Infinity;
  if (cap !== Infinity && (!Number.isSafeInteger(cap) || cap < 0)) {
    throw new ConfigurationError('options.retainFinishedRuns', 'must be a non-negative integer');
  }
  const integerMs = { min: 1, integer: true } as const;
  const retainMs = checkDurationMs(
    options.retainFinishedMs ?? DEFAULT_LOCAL_RETAIN_FINISHED_MS,
    'options.retainFinishedMs',
    integerMs,
  );
  const idleMs = checkDurationMs(
    options.retainIdleThreadsMs ?? DEFAULT_RETAIN_IDLE_THREADS_MS,
    'options.retainIdleThreadsMs',
    integerMs,
  );
  const { scheduler } = options;
  if (scheduler !== undefined && (typeof scheduler?.now !== 'function' || typeof scheduler.schedule !== 'function')) {
    throw new ConfigurationError('options.scheduler', 'must be an RxJS SchedulerLike');
  }
  const sessionId = options.sessionId ?? ((t, p) => `${encodeURIComponent(p)}/${encodeURIComponent(t)}`);
  const threads = new Map<string, ThreadState>();
  const runs = new Map<string, RunRecord>();
  /** Each thread's suspension: its last run's, while no other run started on it (what `resume` continues). */
  const suspensions = new WeakMap<ThreadState, Suspended>();
  const clock = clockOf(scheduler);
  // Ended runs and idle threads, each forgotten a fixed time after it ended / was last used.
  const finished = new Expiry<string>(retainMs, clock, (runId) => runs.delete(runId));
  const idle = new Expiry<string>(idleMs, clock, (key) => {
    if (threads.get(key)?.busy === false) threads.delete(key);
  });
  const sweep = () => {
    finished.sweep();
    idle.sweep();
  };

  const threadOf = (principal: string, threadId: string): [ThreadState, string] => {
    const key = JSON.stringify([principal, threadId]);
    let thread = threads.get(key);
    if (!thread) threads.set(key, (thread = new ThreadState(threadId, sessions, sessionId(threadId, principal))));
    idle.remove(key);
    return [thread, key];
  };
  /** The thread was used: it is forgotten `retainIdleThreadsMs` from now unless it is busy then. */
  const touch = (thread: ThreadState, key: string) => {
    if (!thread.busy && threads.get(key) === thread) idle.add(key);
  };

  /** The principal's run, or RunNotFoundError: another principal's run does not exist for this one. */
  const find = (runId: unknown, principal: unknown): RunRecord => {
    sweep();
    const record = typeof runId === 'string' ? runs.get(runId) : undefined;
    if (record === undefined || record.principal !== principal) throw new RunNotFoundError(String(runId));
    return record;
  };

  const ended = (record: RunRecord, terminal: TerminalEvent): void => {
    record.terminal = terminal;
    if (terminal.type === 'run_completed' && terminal.suspended !== undefined) {
      suspensions.set(record.thread, terminal.suspended);
    }
    record.thread.ended(record.runId);
    finished.add(record.runId);
    while (finished.size > cap) {
      const oldest = finished.oldest()!;
      finished.remove(oldest);
      runs.delete(oldest);
    }
    touch(record.thread, record.threadKey);
  };

  /** A run as `applyRunCommand` reaches it: its handle, its terminal, its thread's mailbox. */
  const targetOf = (record: RunRecord): CommandTarget => ({
    handle: record.handle,
    terminal: () => record.terminal?.type,
    steer(text, id) {
      if (record.thread.live !== record.runId) throw new RunNotLiveError(record.runId);
      return record.thread.steerText(text, id);
    },
    withdraw: (steeringId) => record.thread.withdraw(steeringId),
  });

  const send: SendCommand = async (runId, command, principal) => {
    const record = find(runId, principal);
    const result = applyRunCommand(targetOf(record), command);
    touch(record.thread, record.threadKey);
    return result;
  };

  async function startOnThread(
    req: StartRunRequest,
    agent: Agent<any>,
    thread: ThreadState,
    threadKey: string,
  ): Promise<StartedRun> {
    const session = await thread.session();
    let input: string | readonly Item[] = req.input;
    if (typeof input !== 'string') {
      const history = await settle(session.load());
      input = newInput(input, history, (id) => thread.isPending(id));
    }
    const live = thread.live;
    if (live !== undefined) {
      if (req.ifBusy === 'reject') throw new ThreadBusyError(req.threadId, live);
      return { runId: live, steeringId: thread.steer(input) };
    }
    if (typeof input !== 'string' && input.length === 0) {
      throw new ConfigurationError('input', 'holds no item the thread does not already hold');
    }
    // Each run has a RunControl of its own (its handle's): `stop` acts on this run only.
    const own = { mailbox: thread.mailbox, session, control: undefined };
    const handle = start(agent, input, { ...runOptions, ...REPLAY_OPTIONS, ...own, ...frontendOf(req) });
    // The session moves on: the thread's suspension (if any) is stale now (a start refused keeps it).
    suspensions.delete(thread);
    return track(handle, req.principal, thread, threadKey, input);
  }

  /** A new run on the thread (started or resumed): kept by id, live on the thread until its terminal. */
  function track(
    handle: RunHandle,
    principal: string,
    thread: ThreadState,
    threadKey: string,
    input: string | readonly Item[],
  ): StartedRun {
    const record: RunRecord = { runId: handle.runId, principal, thread, threadKey, handle };
    runs.set(record.runId, record);
    thread.began(record.runId, input);
    // The replay delivers what already happened at once, so a run that ended at its start is seen as ended.
    handle.events$.subscribe((event) => {
      if (isTerminalEvent(event)) ended(record, event);
    });
    return { runId: record.runId };
  }

  async function resumeOnThread(req: ResumeRunRequest, agent: Agent<any>, thread: ThreadState, threadKey: string) {
    const live = thread.live;
    if (live !== undefined) throw new ThreadBusyError(req.threadId, live);
    const suspended = suspensions.get(thread);
    if (suspended === undefined) {
      throw new ConfigurationError('resume', `thread ${req.threadId} has no suspended run to resume`);
    }
    const session = await thread.session();
    const history = await settle(session.load());
    // The client's copy of the conversation: what the session or the suspension holds; nothing new.
    const extra = newInput(req.input, [...history, ...suspended.items], (id) => thread.isPending(id));
    if (extra.length > 0) {
      throw new ConfigurationError('input', 'a resume takes no new message: send it once the resumed run has ended');
    }
    const own = { mailbox: thread.mailbox, session, control: undefined };
    const options = { ...runOptions, ...REPLAY_OPTIONS, ...own, ...frontendOf(req) };
    const handle = resume(agent, suspended, req.decisions, options);
    return track(handle, req.principal, thread, threadKey, []);
  }

  return {
    start(req) {
      try {
        checkStart(req);
      } catch (error) {
        return Promise.reject(error);
      }
      if (!Object.hasOwn(agents, req.agent)) return Promise.reject(new AgentNotFoundError(req.agent));
      const ifBusy = req.ifBusy ?? 'steer';
      if (ifBusy !== 'steer' && ifBusy !== 'reject') {
        return Promise.reject(new NotSupportedError('ifBusy', `'${ifBusy}' is not supported by localRuns`));
      }
      sweep();
      const [thread, key] = threadOf(req.principal, req.threadId);
      // One start at a time per thread: the busy check and the start see each other's effect.
      const started = thread.starting(() =>
        thread.serialize(() => startOnThread({ ...req, ifBusy }, agents[req.agent]!, thread, key)),
      );
      const settled = () => touch(thread, key);
      started.then(settled, settled);
      return started;
    },

    resume(req) {
      try {
        checkStart({ ...req, input: Array.isArray(req?.input) ? req.input : [] });
        if (req.decisions === null || typeof req.decisions !== 'object' || Array.isArray(req.decisions))
          throw new ConfigurationError('decisions', 'must be an object of decisions by call id');
      } catch (error) {
        return Promise.reject(error);
      }
      if (!Object.hasOwn(agents, req.agent)) return Promise.reject(new AgentNotFoundError(req.agent));
      sweep();
      const [thread, key] = threadOf(req.principal, req.threadId);
      const started = thread.starting(() =>
        thread.serialize(() => resumeOnThread(req, agents[req.agent]!, thread, key)),
      );
      const settled = () => touch(thread, key);
      started.then(settled, settled);
      return started;
    },

    events(runId, opts): Observable<RunEvent> {
      return defer(() => {
        const afterSeq = opts?.afterSeq;
        if (afterSeq !== undefined && (!Number.isInteger(afterSeq) || afterSeq < -1)) {
          return throwError(() => new ConfigurationError('afterSeq', 'must be an integer ≥ -1'));
        }
        const record = find(runId, opts?.principal);
        return record.handle.events$.pipe(eventsAfter(afterSeq));
      });
    },

    ...commandMethods(send),
  };
}

/** A request's front-end tools as run options (none: the run options' own, if any). */
function frontendOf(req: { frontendTools?: readonly FrontendTool[] }): { frontendTools?: readonly FrontendTool[] } {
  return req.frontendTools !== undefined && req.frontendTools.length > 0 ? { frontendTools: req.frontendTools } : {};
}
