import { Subscription, asapScheduler, defer, asyncScheduler, config, type Observable, type ObservableInput, type SchedulerLike, type Subscriber } from 'rxjs';
import { CancelSignal } from '../cancel/cancel-signal.js';
import { stage } from '../cancel/stage.js';
import {
  ConcurrentRunError, TimeoutError, isConfigurationError, isModelCallError, isModelOutputError, isTimeoutError,
  serializeError,
} from '../errors.js';
import type { CancelPhase, RunEvent, RunEventDraft, RunFailed, TerminalEvent, Undelivered } from '../events.js';
import { ZERO_USAGE, type Item, type Usage } from '../items.js';
import { Mailbox, type MailboxToken } from '../mailbox/mailbox.js';
import type { ModelResponse } from '../model/types.js';
import type { Session } from '../session/session.js';
import { commitDeadline } from './deadlines.js';
import { toLastValue } from './hooks.js';
import { ON_SETTLED, type InternalRunOptions } from './internal.js';
import { Scratchpad } from './scratchpad.js';
import { linkCancelSources } from './link-cancel.js';
import type { Agent, HookContext, Hooks, RunOptions } from './types.js';

/** How the run loop (`body$`) reports its end to the controller. */
export type Outcome =
  | { readonly kind: 'completed'; readonly output: string; readonly response: ModelResponse }
  | { readonly kind: 'failed'; readonly stopReason: RunFailed['stopReason']; readonly error: unknown }
  | { readonly kind: 'cancelled'; readonly reason: unknown };

/** What the loop emits: event drafts, or its outcome. */
export type Step = RunEventDraft | { readonly type: '@outcome'; readonly outcome: Outcome };

const busy = new WeakMap<Session, object>();
const defaultIds = (): string => globalThis.crypto.randomUUID();

/**
 * One run's state and its terminal logic (docs/cancellation.md). The loop
 * (`body$`) does the work; the controller owns the run token, stamps events,
 * and ends the run exactly once on the first of: the loop's outcome, the
 * token firing (any cancel source, synchronously: guarantee 3: terminal before
 * cancel() returns), or the
 * subscriber unsubscribing (the same cancel path, nothing delivered).
 */
export class RunController<C = unknown> {
  readonly runId: string;
  readonly token: CancelSignal;
  readonly mailbox: Mailbox;
  readonly scratch = new Scratchpad();
  readonly scheduler: SchedulerLike;
  readonly hopScheduler: SchedulerLike;
  phase: CancelPhase = 'turn_entry';
  turn = 0;
  usage: Usage = ZERO_USAGE;
  /** The session history loaded at start (never mutated: the run works on `scratch`). */
  history: readonly Item[] = [];
  lastResponse: ModelResponse | undefined;
  /** True once the outcome is decided; later cancels belong to the next run. */
  decided = false;
  readonly drained: MailboxToken[] = [];
  #seq = 0;
  #ended = false;
  #unsubscribed = false;
  #busyError: ConcurrentRunError | undefined;
  readonly #body = new Subscription();
  readonly #links = new Subscription();
  readonly #ids: (kind: 'run' | 'item') => string;

  constructor(
    readonly agent: Agent<C>,
    readonly opts: RunOptions<C>,
    private readonly subscriber: Subscriber<RunEvent>,
    ownedToken?: CancelSignal,
  ) {
    this.#ids = opts.idGenerator ?? defaultIds;
    this.runId = this.#ids('run');
    this.scheduler = opts.scheduler ?? asyncScheduler;
    this.hopScheduler = opts.scheduler ?? asapScheduler;
    this.token = ownedToken ?? opts.cancel?.child() ?? new CancelSignal();
    this.mailbox = opts.mailbox ?? new Mailbox({ idGenerator: () => this.#ids('item') });
  }

  nextId(): string {
    return this.#ids('item');
  }

  /** Stamps and delivers one event (nothing once unsubscribed). */
  emit(draft: RunEventDraft): void {
    if (this.#unsubscribed || this.decided) return;
    // A literal then Object.assign keeps one hidden-class path; `{ ...draft, … }` costs ~2 µs an event on Node 20.
    this.subscriber.next(Object.assign({ type: draft.type, runId: this.runId, seq: this.#seq++, turn: this.turn, at: this.scheduler.now() }, draft) as RunEvent);
  }

  /** A stage start ("cancel wins at a stage start"): one hop, then poll; sets `phase` for the wait. */
  stage<T>(phase: CancelPhase, start: () => ObservableInput<T>): Observable<T> {
    return defer(() => {
      this.phase = phase;
      return stage(this.token, start, this.hopScheduler);
    });
  }

  /** For `callHooks$`: phase `hook` while a hook runs, then back to where the run was (a cancel after it is not "in a hook"). */
  readonly enterHook = (): (() => void) => {
    const before = this.phase;
    this.phase = 'hook';
    return () => {
      this.phase = before;
    };
  };

  /** The hook sets a hook point calls, in order: the agent's, then the run's. */
  get hookSets(): readonly (Hooks<C> | undefined)[] {
    return [this.agent.hooks, this.opts.hooks];
  }

  /** A hook's context, with the hook point's own fields (`request`, `call`, …) added. */
  hookContext<E extends object = {}>(extra?: E): HookContext<C> & E {
    const ctx = { runId: this.runId, agent: this.agent.name, turn: this.turn, cancel: this.token, mailbox: this.mailbox, context: this.opts.context as C };
    return extra === undefined ? (ctx as HookContext<C> & E) : Object.assign(ctx, extra);
  }

  /** Starts the run: links cancel sources, emits `run_started`, then subscribes the loop. */
  start(body: (rc: RunController<C>) => Observable<Step>): void {
    const { session } = this.opts;
    if (session && busy.has(session)) this.#busyError = new ConcurrentRunError('options.session', 'another run is using this session');
    else if (!this.mailbox.acquire(this)) this.#busyError = new ConcurrentRunError('options.mailbox', 'another run is using this mailbox');
    else if (session) busy.set(session, this);
    const started = { type: 'run_started', agent: this.agent.name } as const;
    if (this.#busyError) {
      this.emit(started);
      return this.finish({ kind: 'failed', stopReason: 'configuration_error', error: this.#busyError });
    }
    linkCancelSources(this, this.#links);
    if (this.token.isCancelled) {
      this.emit(started);
      return this.finish({ kind: 'cancelled', reason: this.token.reason }); // checkpoint 1: nothing else starts
    }
    // The controller's listener goes first, so the run ends before other listeners react, and
    // before run_started is delivered: a cancel from its handler is honoured at once
    // (guarantee 3: terminal before cancel() returns).
    this.#links.add(this.token.onCancel((reason) => this.finish({ kind: 'cancelled', reason })));
    this.emit(started);
    if (this.decided) return;
    this.#body.add(
      body(this).subscribe({
        next: (step) => {
          if (this.decided) return;
          if (step.type === '@outcome') this.finish(step.outcome);
          else this.emit(step);
        },
        error: (error) => this.finish({ kind: 'failed', stopReason: stopReasonOf(error), error }),
        complete: () => this.finish({ kind: 'failed', stopReason: 'internal_error', error: new Error('the run loop ended without an outcome') }),
      }),
    );
  }

  /** The subscriber unsubscribed: the same cancel path, with nothing delivered. */
  teardown(): void {
    if (this.#ended) return;
    this.#unsubscribed = true;
    if (!this.decided) this.token.cancel({ type: 'unsubscribed' });
  }

  /** Decides the outcome once; a completed run commits its session first (never cancelled, but bounded). */
  finish(outcome: Outcome): void {
    if (this.decided) return;
    this.decided = true;
    this.#body.unsubscribe(); // guarantee 11: cleanup starts inner to outer (tools' signals, model requests)
    const { session } = this.opts;
    if (outcome.kind !== 'completed' || !session) return this.#settle(outcome);
    this.#commit(session, outcome);
  }

  /**
   * "The commit cannot be cancelled", but it is bounded: `append(items, { runId, signal })`, the
   * signal aborted at `deadlines.commitMs` on the run's scheduler. A write that fails or passes the
   * deadline ends the run `session_error` (its Items in `partial`, its steering given back); one that
   * lands later is harmless, `append` being idempotent per `runId`. A cancel meanwhile is left for
   * the next run (the outcome is decided). The timer exists only while a write is pending.
   */
  #commit(session: Session, completed: Outcome): void {
    const controller = new AbortController();
    const pending = new Subscription();
    let ended = false;
    const end = (outcome: Outcome, abort?: TimeoutError): void => {
      if (ended) return;
      ended = true;
      pending.unsubscribe(); // the write's late answer is ignored from here on
      if (abort) controller.abort(abort);
      this.#settle(outcome);
    };
    const failed = (error: unknown): Outcome => ({ kind: 'failed', stopReason: 'session_error', error });
    const options = { runId: this.runId, signal: controller.signal };
    const write$ = defer(() => toLastValue(session.append(this.scratch.items, options)));
    pending.add(write$.subscribe({ error: (error) => end(failed(error)), complete: () => end(completed) }));
    const commitMs = commitDeadline(this.opts.deadlines);
    if (ended || commitMs === undefined) return;
    pending.add(
      this.scheduler.schedule(() => {
        const error = new TimeoutError('commit', commitMs);
        end(failed(error), error);
      }, commitMs),
    );
  }

  #settle(outcome: Outcome): void {
    if (this.#ended) return;
    const { cancel, session } = this.opts;
    // Re-arm the caller's token that this run saw fire, before the terminal event
    // (guarantee 5: one cancel, one cancelled run).
    if (outcome.kind === 'cancelled' && cancel?.isCancelled) cancel.reset();
    const onSettled = (this.opts as InternalRunOptions)[ON_SETTLED];
    if (outcome.kind === 'completed') {
      this.mailbox.markDelivered(this.drained);
      onSettled?.({ items: this.scratch.items });
    } else {
      this.mailbox.giveBack(this.drained);
      if (outcome.kind === 'failed') onSettled?.({ error: outcome.error });
    }
    // A run refused as busy never owned the mailbox's queue: nothing of it is this run's to report.
    const undelivered: Undelivered[] = this.#busyError ? [] : this.mailbox.peek().map((t) => ({ id: t.id, content: t.content }));
    this.#links.unsubscribe();
    if (!this.#busyError) {
      this.mailbox.release(this);
      if (session && busy.get(session) === this) busy.delete(session);
    }
    this.token.dispose();
    const terminal = this.#terminal(outcome, undelivered);
    for (const hooks of this.hookSets) {
      try {
        hooks?.runEnded?.(this.hookContext({ outcome: terminal }));
      } catch (err) {
        reportUnhandled(err);
      }
    }
    this.#ended = true;
    if (!this.#unsubscribed) this.subscriber.next(terminal);
    this.subscriber.complete();
  }

  #terminal(outcome: Outcome, undelivered: Undelivered[]): TerminalEvent {
    const base = { runId: this.runId, seq: this.#seq, turn: this.turn, at: this.scheduler.now(), undelivered, usage: this.usage };
    switch (outcome.kind) {
      case 'completed': {
        const { finishReason } = outcome.response;
        return { type: 'run_completed', ...base, stopReason: 'completed', output: outcome.output, finishReason };
      }
      case 'cancelled': {
        const partial = this.scratch.partial(() => this.nextId());
        const { reason } = outcome;
        return { type: 'run_cancelled', ...base, stopReason: 'cancelled', reason, phase: this.phase, partial };
      }
      case 'failed': {
        const partial = this.scratch.partial(() => this.nextId());
        const { stopReason } = outcome;
        return { type: 'run_failed', ...base, error: serializeError(outcome.error), stopReason, partial };
      }
    }
  }
}

function stopReasonOf(error: unknown): RunFailed['stopReason'] {
  if (isModelCallError(error) || isTimeoutError(error) || isModelOutputError(error)) return 'model_error';
  if (isConfigurationError(error)) return 'configuration_error';
  return 'internal_error';
}

function reportUnhandled(err: unknown): void {
  if (config.onUnhandledError) config.onUnhandledError(err);
  else setTimeout(() => { throw err; });
}
