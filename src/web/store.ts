import {
  BehaviorSubject,
  EMPTY,
  auditTime,
  catchError,
  concat,
  defer,
  exhaustMap,
  from,
  fromEvent,
  map,
  of,
  merge,
  repeat,
  retry,
  switchMap,
  takeWhile,
  tap,
  throwError,
  timer,
  type Observable,
  type Subscription,
} from 'rxjs';
import { ApiError, api, attachRun, startRun } from './api.js';
import { loadState, saveState } from './persist.js';
import type { StreamItem } from './sse.js';
import { initialState, isTerminal, messagesOf, reduce, type Action, type ChatState } from './state.js';
import {
  CONNECTION_LOST_WORDS,
  RELAUNCHED_WORDS,
  RUN_GONE_WORDS,
  SLOW_STOP_WORDS,
  STEER_TOO_LATE_WORDS,
  UNREACHABLE_WORDS,
} from './wording.js';

/** The reason the Stop button cancels a run with (shown as the cancelled run's reason). */
export const STOP_REASON = 'stopped by the user';

/** Re-attaching after a failed attempt: at most this many in a row, backing off up to 3 s. */
const ATTACH_RETRIES = 8;
/** While the server's queue is unavailable (503 `queue_unavailable`): attach again this often, without limit. */
const UNAVAILABLE_RETRY_MS = 1000;
/** With `serve --queue`: a Stop not answered after this long says why it may take a while. */
const SLOW_STOP_MS = 1500;
/** How often the page asks `serve --queue` how its queue is (`GET /api/queue`). */
const QUEUE_POLL_MS = 2000;

/**
 * The page's state as an RxJS `BehaviorSubject`, and the actions that change it. A run's frames come from its
 * start request, then — when that stream ends before the run's terminal event (a reload, a connection the
 * server closed for a slow reader, a network error) — from the re-attach route with `Last-Event-ID` set to
 * the last frame applied: no duplicate, no gap (docs/ui.md, "Re-attaching"). The state is saved in
 * `sessionStorage` as it changes, so a reload resumes the same conversation and run.
 */
export class ChatStore {
  readonly state$: BehaviorSubject<ChatState>;
  #stream: Subscription | undefined;
  #queue: Subscription | undefined;
  readonly #saving: Subscription;

  /**
   * @param agent The agent a run starts, or a function asked at each start (the page's setting "Ask before
   *   writes and shell commands" chooses, see ./ask-setting.ts).
   */
  constructor(
    readonly agent: string | (() => string),
    private readonly storage: Storage | undefined = globalThis.sessionStorage,
  ) {
    this.state$ = new BehaviorSubject(loadState(storage) ?? initialState(crypto.randomUUID()));
    const pagehide = typeof window === 'undefined' ? EMPTY : fromEvent(window, 'pagehide');
    this.#saving = merge(this.state$.pipe(auditTime(200)), pagehide).subscribe(() => saveState(storage, this.state));
  }

  get state(): ChatState {
    return this.state$.value;
  }

  dispatch(action: Action): void {
    this.state$.next(reduce(this.state, action));
  }

  /** After a reload: follows the saved run from the frame after the last one applied. */
  resume(): void {
    const run = this.state.run;
    if (run === undefined) return;
    if (run.runId === undefined) {
      this.dispatch({ type: 'lost', notice: 'The page was reloaded before the run started; send the message again.' });
      return;
    }
    // A Stop still out when the page went was dropped with it: the run's stream says whether it landed.
    if (run.stopping) this.dispatch({ type: 'stop_failed' });
    this.#follow(EMPTY);
  }

  /** Sends a message: starts a run with the conversation so far (loopctl takes only what its session lacks). */
  send(text: string): void {
    if (this.state.run !== undefined) return;
    this.dispatch({ type: 'send', id: crypto.randomUUID(), text });
    const agent = typeof this.agent === 'function' ? this.agent() : this.agent;
    const first = startRun(agent, this.state.threadId, messagesOf(this.state)).pipe(
      switchMap((started): Observable<StreamItem> => {
        if (started.kind === 'stream') return started.items;
        // The thread had a live run (another tab): the message steers it; follow that run from its start.
        this.dispatch({ type: 'run', runId: started.runId });
        this.dispatch({ type: 'steered', runId: started.runId, id: started.steeringId, text });
        return EMPTY;
      }),
    );
    this.#follow(first);
  }

  /** Stop: cancels the run; resolves once the server answered (after the run's `run_cancelled` was emitted). */
  async stop(): Promise<void> {
    const runId = this.state.run?.runId;
    if (runId === undefined) return;
    this.dispatch({ type: 'stopping' });
    // A queued run's worker may have died: its Stop is answered once the queue declares it lost. Say so meanwhile.
    const slow =
      this.state.queue === undefined
        ? undefined
        : setTimeout(() => this.dispatch({ type: 'notice', notice: SLOW_STOP_WORDS }), SLOW_STOP_MS);
    try {
      const answer = await this.#call(() => api.cancel(runId, STOP_REASON), 'Stop');
      // Not sent, or no answer: the run goes on as far as the page knows (its stream says when it ends).
      if (answer === undefined && this.state.run?.runId === runId) this.dispatch({ type: 'stop_failed' });
    } finally {
      clearTimeout(slow);
    }
  }

  /** Stop after this step: a graceful stop at the end of the current turn (run control). */
  async stopAfterStep(): Promise<void> {
    const runId = this.state.run?.runId;
    if (runId === undefined) return;
    await this.#call(() => api.stop(runId), 'Stop after this step');
  }

  /** Steers the live run; resolves true when the message was queued. */
  async steer(text: string): Promise<boolean> {
    const runId = this.state.run?.runId;
    if (runId === undefined) return false;
    const answer = await this.#call(
      () => api.steer(runId, text),
      'Steering',
      (error) =>
        // It ended meanwhile (its terminal frame may still be on its way): the text stays for a new message.
        error instanceof ApiError && error.code === 'run_not_live' ? STEER_TOO_LATE_WORDS : undefined,
    );
    if (answer === undefined) return false;
    this.dispatch({ type: 'steered', runId, id: answer.id, text });
    return true;
  }

  /** Withdraws a queued steering message; it never reaches the model. */
  async withdraw(id: string): Promise<void> {
    const item = this.state.steering.find((s) => s.id === id);
    if (item === undefined || item.status !== 'queued') return;
    const answer = await this.#call(() => api.withdraw(item.runId, id), 'Withdraw');
    if (answer?.withdrawn) this.dispatch({ type: 'withdrawn', id });
    else if (answer) this.dispatch({ type: 'notice', notice: 'Too late to withdraw: the run has taken it.' });
  }

  /** Approves or rejects a tool call waiting for approval (run control). */
  async decide(callId: string, approve: boolean, reason = 'rejected by the user'): Promise<void> {
    const runId = this.state.run?.runId;
    // The run has ended (its cards are settled): nothing waits for this decision any more.
    if (runId === undefined) return this.dispatch({ type: 'undecidable', callId });
    const decision = approve ? ({ approve: true } as const) : ({ approve: false, reason } as const);
    const answer = await this.#call(() => api.decide(runId, callId, decision), approve ? 'Approve' : 'Reject');
    if (answer?.decided) this.dispatch({ type: 'decided', callId, approve });
    else if (answer) this.dispatch({ type: 'undecidable', callId });
  }

  /** A new conversation (a new thread); only while no run works. */
  newChat(): void {
    if (this.state.run !== undefined) return;
    this.#stream?.unsubscribe();
    this.state$.next(initialState(crypto.randomUUID()));
  }

  /**
   * With `serve --queue`: asks how the queue is every {@link QUEUE_POLL_MS}, so the page says when it is
   * unavailable (also with no run) and when no worker takes its runs.
   */
  watchQueue(): void {
    this.#queue?.unsubscribe();
    this.#queue = timer(0, QUEUE_POLL_MS)
      .pipe(
        exhaustMap(() =>
          from(api.queue()).pipe(
            map((q): Action => ({ type: 'queue', workers: q.workers, start: q.start })),
            catchError((error: unknown) =>
              unavailable(error) ? of<Action>({ type: 'unavailable', notice: error.message }) : EMPTY,
            ),
          ),
        ),
      )
      .subscribe((action) => this.dispatch(action));
  }

  dispose(): void {
    this.#queue?.unsubscribe();
    this.#stream?.unsubscribe();
    this.#saving.unsubscribe();
    saveState(this.storage, this.state);
  }

  /** Applies `first`, then re-attaches after the last frame applied until the run's terminal event. */
  #follow(first: Observable<StreamItem>): void {
    this.#stream?.unsubscribe();
    const started = first.pipe(
      // Cut off once the run is known: re-attaching picks it up. Before that, the start itself failed.
      catchError((error: unknown) => (this.state.run?.runId ? EMPTY : throwError(() => error))),
    );
    let failures = 0; // attempts in a row that failed for another reason than the queue's outage
    const attached = defer(() => {
      const run = this.state.run;
      return run?.runId ? attachRun(run.runId, this.state.threadId, run.lastEventId) : EMPTY;
    }).pipe(
      tap(() => (failures = 0)),
      retry({
        delay: (error: unknown) => {
          if (unavailable(error)) {
            // The queue's Redis does not answer: say so, and keep attaching until it does.
            this.dispatch({ type: 'unavailable', notice: error.message });
            return timer(UNAVAILABLE_RETRY_MS);
          }
          if (gone(error) || ++failures > ATTACH_RETRIES) return throwError(() => error);
          // The server does not answer (killed, restarting, a cut network): say so while trying again; the
          // next stream that answers takes the words away.
          if (error instanceof TypeError) this.dispatch({ type: 'unavailable', notice: CONNECTION_LOST_WORDS });
          return timer(Math.min(100 * 2 ** failures, 3000));
        },
      }),
      // A stream that ended before the terminal event was closed by the server (a slow reader): attach again.
      repeat({ delay: () => timer(50) }),
    );
    this.#stream = concat(
      started,
      defer(() => (this.state.run ? attached : EMPTY)),
    )
      .pipe(takeWhile((item) => !(item.kind === 'frame' && isTerminal(item.event)), true))
      .subscribe({
        next: (item) =>
          this.dispatch(
            item.kind === 'run'
              ? { type: 'run', runId: item.runId }
              : item.kind === 'waiting'
                ? { type: 'waiting' }
                : { type: 'frame', ...item },
          ),
        error: (error: unknown) => {
          if (!unavailable(error)) return this.dispatch({ type: 'lost', notice: lostWords(error) });
          // The start met the queue's outage: said until the queue answers again (GET /api/queue), not for good.
          this.dispatch({ type: 'lost', notice: undefined });
          this.dispatch({ type: 'unavailable', notice: error.message });
        },
      });
  }

  /**
   * A call whose failure becomes the notice (a 501 says what is not available yet); `words` may word a failure
   * of its own (undefined: the general words).
   */
  async #call<T>(
    call: () => Promise<T>,
    what: string,
    words: (error: unknown) => string | undefined = () => undefined,
  ): Promise<T | undefined> {
    try {
      const answer = await call();
      this.dispatch({ type: 'notice', notice: undefined });
      return answer;
    } catch (error) {
      const notice =
        words(error) ??
        (error instanceof ApiError && error.status === 501
          ? `${what} is not available in this version of loopctl (the server answered 501: ${error.message}).`
          : `${what} failed: ${describeError(error)}`);
      this.dispatch({ type: 'notice', notice });
      return undefined;
    }
  }
}

/** The server's queue does not answer (503 `queue_unavailable`): the run is still there. */
const unavailable = (error: unknown): error is ApiError =>
  error instanceof ApiError && error.status === 503 && error.code === 'queue_unavailable';

/** The run no longer exists for this browser (the server restarted, or forgot it). */
const gone = (error: unknown): boolean => error instanceof ApiError && error.status >= 400 && error.status < 500;

/** Why the page stopped following its run, in words: the server forgot the page or the run, or is not there. */
function lostWords(error: unknown): string {
  if (error instanceof ApiError && error.status === 401) return RELAUNCHED_WORDS;
  if (error instanceof ApiError && error.code === 'run_not_found') return RUN_GONE_WORDS;
  if (error instanceof TypeError) return UNREACHABLE_WORDS;
  return describeError(error);
}

function describeError(error: unknown): string {
  if (error instanceof ApiError) return error.message;
  if (error instanceof TypeError) return 'the connection to loopctl serve failed';
  return error instanceof Error ? error.message : String(error);
}
