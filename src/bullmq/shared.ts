import type { Item } from '../items.js';
import { toJsonText, isInstance } from '../describe.js';
import type { RunEvent } from '../events.js';
import { ConcurrentRunError } from '../errors.js';
import { SessionStorageError } from '../session/errors.js';
import type { LocalRunsSessionStore } from '../runs/thread.js';
import type { TraceCarrier } from '../runs/trace-carrier.js';
import type { JournalOptions, Lease, LeaseOptions, RunJournal, Session } from '../session/session.js';
import { toLastValue } from '../last-value.js';
import { lastValueFrom } from 'rxjs';
import { QueueAuthError, type QueueAuth } from './auth.js';

/** What a run's BullMQ job carries (job id: the run id). */
export interface RunJobData {
  readonly runId: string;
  readonly agent: string;
  /** The session id of the thread (the thread's key). */
  readonly sessionId: string;
  readonly input: string | readonly Item[];
  /** The caller's W3C trace context (`Runs.start({ trace })`): the worker's run joins that trace. */
  readonly trace?: TraceCarrier;
  /**
   * A resume (`queueRuns().resume`): the worker continues this suspension with these decisions (the engine's
   * `resume()`) instead of starting a run on `input` (then `[]`).
   */
  readonly resume?: QueuedResume;
  /** The job's tag (HMAC-SHA256 under the queue `secret`, over {@link jobParts}); absent when insecure. */
  readonly mac?: string;
}

/** What a resume job carries: the suspension as the queue kept it, and a decision per pending call. */
export interface QueuedResume {
  /** `run_completed.suspended` of the thread's suspended run (JSON). */
  readonly suspended: unknown;
  readonly decisions: Readonly<Record<string, unknown>>;
}

/** What a job's tag covers: its run, agent, thread (session id), input, trace context and resume (if any). */
export const jobParts = (data: Partial<RunJobData>) => [
  'job',
  data.runId ?? null,
  data.agent ?? null,
  data.sessionId ?? null,
  data.input ?? null,
  data.trace ?? null,
  // Only a resume job has it: the tags of other jobs are as before.
  ...(data.resume !== undefined ? [{ resume: data.resume }] : []),
];

/** `data` with its tag. */
export function signJob(auth: QueueAuth, data: RunJobData): RunJobData {
  const mac = auth.sign(jobParts(data));
  return mac ? { ...data, mac } : data;
}

/**
 * Checks a job a worker took: its data is signed (`mac` over {@link jobParts}) and its BullMQ id is its run id.
 * @throws {QueueAuthError} `unsigned` or `mis_signed`.
 */
export function checkJob(auth: QueueAuth, jobId: string | undefined, data: RunJobData): void {
  const value = (data !== null && typeof data === 'object' ? data : {}) as Partial<RunJobData>;
  const refused = auth.verify(jobParts(value), value.mac);
  if (refused !== undefined) throw new QueueAuthError(refused, 'the job is not signed with the queue secret');
  if (!auth.insecure && jobId !== value.runId) {
    throw new QueueAuthError('mis_signed', `the job's id ${JSON.stringify(jobId)} is not its signed run id`);
  }
}

/** The prefix of loopctl's keys and of BullMQ's own when none is given. */
export const DEFAULT_PREFIX = 'loopctl';
/** How long a finished run's events stay readable (ms): 24 h. */
export const DEFAULT_RETAIN_FINISHED_MS = 86_400_000;

/** An event as the JSON text stored in the stream; a value with no JSON form is described (never thrown on). */
export function eventJson(event: RunEvent): string {
  const json = toJsonText(event);
  return json.ok ? json.text : JSON.stringify({ ...event, reason: '[unprintable reason]' });
}

/** Options of the BullMQ jobs loopctl adds: the run id as job id, nothing kept once done. */
export const jobOptions = (runId: string) =>
  ({ jobId: runId, removeOnComplete: true, removeOnFail: true, attempts: 1 }) as const;

/**
 * The key a claim's session commit is stored under (the append's `runId`, idempotent per key): the run id for
 * the first claim, `<runId>#<token>` for a rerun's. A peer that declares a claim lost fences its key off first
 * (`Session.fenceRun`), so the lost worker's commit, landing later, stores nothing. `perClaim` (workers with
 * `onWorkerLost: 'continue'`): `<runId>#<token>` for every claim, the first too, so that fencing a claim never
 * marks the run id itself stored — which would seal the run's journal, and a sealed run cannot be continued.
 */
export const commitKeyOf = (runId: string, token: string, perClaim = false): string =>
  !perClaim && (token === '' || token === '1') ? runId : `${runId}#${token}`;

/** How long a commit waits before it is sent again after a connection error (ms). */
const COMMIT_RETRY_MS = 200;

/**
 * A write error that says nothing about whether the write stored (the connection dropped, was refused, or the
 * server shut it down): the append, idempotent per run id, is sent again.
 */
export function isTransientStorageError(error: unknown): boolean {
  if (!isInstance(error, SessionStorageError)) return false;
  const { code, message } = error as SessionStorageError;
  return (
    /^(08...|57P0[123]|ECONNRESET|ECONNREFUSED|EPIPE|ETIMEDOUT|EHOSTUNREACH)$/.test(code) ||
    /Connection terminated|connection (was )?closed|Client has encountered a connection error/i.test(message)
  );
}

/**
 * The session `id` of `store`, resolved when first used. With `patientMs`, `acquire` waits (retrying every
 * 250 ms, up to that long) while another holder's lease is live: a rerun after a lost worker waits for the
 * dead worker's lease to expire ("a dead holder's lease expires") instead of failing at once.
 * `recordCallStart` goes to the store's session, so a resumed call started by one worker is never run again
 * by another. With `commitKey`, a run's append is stored under that key instead of its run id (see
 * {@link commitKeyOf}); an append with a key that fails with a connection error ({@link isTransientStorageError})
 * is sent again every 200 ms until it answers or its signal (the run's `commitMs`) aborts: the append is
 * idempotent per key, so an acknowledgement lost after the commit stored ends the run completed. With `journal`,
 * the store's run journal by run id, its writes carrying `claim` (the claim token's number) when given.
 */
export function lazySession(
  store: LocalRunsSessionStore,
  id: string,
  patientMs = 0,
  commitKey?: string,
  journal = false,
  claim?: number,
): Session {
  let session: Promise<Session> | undefined;
  const get = (): Promise<Session> => (session ??= Promise.resolve().then(() => store.session(id)));
  return {
    ...(journal ? journalOf(get, claim) : {}),
    load: () => get().then(async (s) => (await lastValueFrom(toLastValue(s.load()))) as readonly Item[]),
    append: (items, options) =>
      get().then(async (s) => {
        const keyed =
          commitKey !== undefined && options?.runId !== undefined ? { ...options, runId: commitKey } : options;
        for (;;) {
          try {
            return void (await lastValueFrom(toLastValue(s.append(items, keyed))));
          } catch (error) {
            if (keyed?.runId === undefined || !isTransientStorageError(error) || keyed.signal?.aborted) throw error;
            await new Promise((resolve) => setTimeout(resolve, COMMIT_RETRY_MS));
            if (keyed.signal?.aborted) throw error;
          }
        }
      }),
    acquire: (runId: string, options: LeaseOptions): Promise<Lease> =>
      get().then(async (s) => {
        if (typeof s.acquire !== 'function') return noLease(runId, options.ttlMs);
        const until = Date.now() + patientMs;
        for (;;) {
          try {
            return (await lastValueFrom(toLastValue(s.acquire(runId, options)))) as Lease;
          } catch (error) {
            if (!isInstance(error, ConcurrentRunError) || Date.now() >= until) throw error;
            await new Promise((resolve) => setTimeout(resolve, 250));
          }
        }
      }),
    // A resumed call's start (docs/run-control.md, "Exactly once across resumes"), in the store: every worker
    // sees it. A store without it records in this process only, as the engine does.
    recordCallStart: (suspensionId: string, callId: string): Promise<boolean> =>
      get().then(async (s) => {
        if (typeof s.recordCallStart === 'function') {
          // A journalling claim's starts carry its claim: a claim declared lost never starts a tool.
          const options = journal && claim !== undefined ? { claim } : undefined;
          return (await lastValueFrom(toLastValue(s.recordCallStart(suspensionId, callId, options)))) as boolean;
        }
        const key = JSON.stringify([id, suspensionId, callId]);
        if (startedHere.has(key)) return false;
        startedHere.add(key);
        return true;
      }),
  };
}

/**
 * The journal methods of a queued run's session (`onWorkerLost: 'continue'`), by run id — never the claim's
 * commit key: every claim of a run writes and reads one journal. A store without a journal journals nothing
 * and reads an empty one (a lost run is then rerun from its last commit). `discardJournal` does nothing here:
 * a run's journal is removed by the worker once its terminal event is stored (./worker-run.ts), so the
 * cancel of a claim declared lost (its writes refused) cannot discard the journal the next claim goes on from.
 * `claim`: the claim token's number, put on every write (`JournalOptions.claim`), so that the store refuses the
 * writes of a claim a peer declared lost (`Session.fenceJournal`) or a later claim wrote after.
 */
function journalOf(
  get: () => Promise<Session>,
  claim: number | undefined,
): Pick<Session, 'journalTurn' | 'journalResponse' | 'readJournal' | 'discardJournal'> {
  // The claim's writes carry it: once a later claim took the run over, they are refused (`JournalFencedError`).
  const claimed = (options: JournalOptions | undefined) => (claim === undefined ? options : { ...options, claim });
  const call = async <T>(fn: (s: Session) => unknown, none: T): Promise<T> => {
    const s = await get();
    const result = fn(s);
    return result === undefined ? none : ((await lastValueFrom(toLastValue(result as never))) as T);
  };
  return {
    journalTurn: (runId, turn, items, options) =>
      call((s) => s.journalTurn?.(runId, turn, items, claimed(options)), undefined),
    journalResponse: (runId, turn, items, options) =>
      call((s) => s.journalResponse?.(runId, turn, items, claimed(options)), undefined),
    readJournal: (runId) => call((s) => s.readJournal?.(runId), { sealed: false, turns: [] } as RunJournal),
    discardJournal: () => Promise.resolve(),
  };
}

/** Resumed calls' starts recorded in this process, for a store whose sessions cannot record them. */
const startedHere = new Set<string>();

/** The lease of a session that has none (one process): renewing and releasing do nothing. */
function noLease(runId: string, ttlMs: number): Lease {
  return { runId, ttlMs, renew: () => Promise.resolve(), release: () => Promise.resolve() };
}
