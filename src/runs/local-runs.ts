import { defer, throwError, type Observable } from 'rxjs';
import { ConfigurationError } from '../errors.js';
import type { RunEvent, TerminalEvent } from '../events.js';
import { isTerminalEvent } from '../events.js';
import type { Item } from '../items.js';
import type { Agent, RunHandle, RunOptions } from '../engine/types.js';
import { start } from '../engine/start.js';
import { checkDecision } from './decision.js';
import { eventsAfter } from './compact.js';
import { AgentNotFoundError, NotSupportedError, RunNotFoundError, RunNotLiveError, ThreadBusyError } from './errors.js';
import { newInput, settle } from './new-input.js';
import { ThreadState, type LocalRunsSessionStore } from './thread.js';
import type { Runs, StartRunRequest, StartedRun } from './types.js';

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
  /** Finished runs kept for `events()`, oldest forgotten first (then `RunNotFoundError`). Default 1 000. */
  readonly retainFinishedRuns?: number;
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
  readonly handle: RunHandle;
  terminal?: TerminalEvent;
}

const IF_BUSY = new Set(['reject', 'enqueue', 'interrupt', 'rollback', 'steer']);

/**
 * {@link Runs} in this process: each principal's thread has one `Mailbox` (its steering, kept across runs:
 * "give back to the front") and one Session, and at most one live run ("one run per mailbox and session").
 * `ifBusy`: `'steer'` (default) and `'reject'`; the others reject with `NotSupportedError`. `stop` is the
 * run's graceful stop (`handle.stop`, docs/run-control.md). `decide` approves or rejects a call awaiting
 * approval in the run ("Approvals", docs/run-control.md): `true` when it was awaiting one. Runs are
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
  const retain = options.retainFinishedRuns ?? 1000;
  if (!Number.isInteger(retain) || retain < 0) {
    throw new ConfigurationError('options.retainFinishedRuns', 'must be a non-negative integer');
  }
  const sessionId = options.sessionId ?? ((t, p) => `${encodeURIComponent(p)}/${encodeURIComponent(t)}`);
  const threads = new Map<string, ThreadState>();
  const runs = new Map<string, RunRecord>();
  const finished: string[] = [];

  const threadOf = (principal: string, threadId: string): ThreadState => {
    const key = JSON.stringify([principal, threadId]);
    let thread = threads.get(key);
    if (!thread) threads.set(key, (thread = new ThreadState(threadId, sessions, sessionId(threadId, principal))));
    return thread;
  };

  /** The principal's run, or RunNotFoundError: another principal's run does not exist for this one. */
  const find = (runId: unknown, principal: unknown): RunRecord => {
    const record = typeof runId === 'string' ? runs.get(runId) : undefined;
    if (record === undefined || record.principal !== principal) throw new RunNotFoundError(String(runId));
    return record;
  };

  const ended = (record: RunRecord, terminal: TerminalEvent): void => {
    record.terminal = terminal;
    record.thread.ended(record.runId);
    finished.push(record.runId);
    while (finished.length > retain) runs.delete(finished.shift()!);
  };

  async function startOnThread(req: StartRunRequest, agent: Agent<any>, thread: ThreadState): Promise<StartedRun> {
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
    const handle = start(agent, input, { ...runOptions, ...REPLAY_OPTIONS, ...own });
    const record: RunRecord = { runId: handle.runId, principal: req.principal, thread, handle };
    runs.set(record.runId, record);
    thread.began(record.runId, input);
    // The replay delivers what already happened at once, so a run that ended at its start is seen as ended.
    handle.events$.subscribe((event) => {
      if (isTerminalEvent(event)) ended(record, event);
    });
    return { runId: record.runId };
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
      const thread = threadOf(req.principal, req.threadId);
      // One start at a time per thread: the busy check and the start see each other's effect.
      return thread.serialize(() => startOnThread({ ...req, ifBusy }, agents[req.agent]!, thread));
    },

    events(runId, opts): Observable<RunEvent> {
      return defer(() => {
        const record = find(runId, opts?.principal);
        const afterSeq = opts.afterSeq;
        if (afterSeq !== undefined && (!Number.isInteger(afterSeq) || afterSeq < -1)) {
          return throwError(() => new ConfigurationError('afterSeq', 'must be an integer ≥ -1'));
        }
        return record.handle.events$.pipe(eventsAfter(afterSeq));
      });
    },

    async cancel(runId, reason, principal) {
      const record = find(runId, principal);
      if (record.terminal) return false;
      record.handle.cancel(reason); // guarantee 3: terminal before cancel() returns, so it is known here
      const terminal = record.terminal as TerminalEvent | undefined;
      return terminal?.type === 'run_cancelled';
    },

    async stop(runId, opts, principal) {
      const record = find(runId, principal);
      // Bad input is refused naming the field (`at`, `graceMs`) also for a run that has ended.
      return record.handle.stop(opts);
    },

    async steer(runId, text, principal) {
      const record = find(runId, principal);
      if (typeof text !== 'string') throw new ConfigurationError('text', 'must be a string');
      if (record.terminal || record.thread.live !== record.runId) throw new RunNotLiveError(record.runId);
      return { id: record.thread.steer(text) };
    },

    async withdraw(runId, steeringId, principal) {
      const record = find(runId, principal);
      return typeof steeringId === 'string' && record.thread.withdraw(steeringId);
    },

    async decide(runId, callId, decision, principal) {
      const record = find(runId, principal);
      const d = checkDecision(callId, decision);
      if (record.terminal) return false;
      return d.approve ? record.handle.approve(callId as string) : record.handle.reject(callId as string, d.reason);
    },
  };
}

/** `start` request fields, each named in the error (shared with the other `Runs` implementations). */
export function checkStart(req: StartRunRequest): void {
  if (req === null || typeof req !== 'object') throw new ConfigurationError('req', 'must be an object');
  for (const field of ['agent', 'threadId', 'principal'] as const) {
    if (typeof req[field] !== 'string' || req[field] === '')
      throw new ConfigurationError(field, 'must be a non-empty string');
  }
  if (typeof req.input !== 'string' && !Array.isArray(req.input)) {
    throw new ConfigurationError('input', 'must be a string or an array of Items');
  }
  if (req.ifBusy !== undefined && !IF_BUSY.has(req.ifBusy)) {
    throw new ConfigurationError('ifBusy', `must be one of ${[...IF_BUSY].join(', ')}`);
  }
}
