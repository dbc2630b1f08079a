import {
  Subscriber,
  Subscription,
  asapScheduler,
  asyncScheduler,
  config,
  defer,
  type Observable,
  type SchedulerLike,
  type Unsubscribable,
} from 'rxjs';
import { CancelSignal } from '../cancel/cancel-signal.js';
import { Approvals } from '../control/approvals.js';
import { attachRun, detachRun, type ControlledRun } from '../control/run-control.js';
import { stopTimeoutReason, type StopRequest } from '../control/stop.js';
import type { ApprovalDecision, Suspended } from '../control/suspended.js';
import { DEFAULTS } from '../defaults.js';
import { ConcurrentRunError, TimeoutError, serializeError } from '../errors.js';
import type { CancelPhase, RunEvent, RunEventDraft, TerminalEvent, Undelivered } from '../events.js';
import { ZERO_USAGE, addUsage, type Item } from '../items.js';
import { toLastValue } from '../last-value.js';
import { Mailbox } from '../mailbox/mailbox.js';
import type { Session } from '../session/session.js';
import { emitCancelled } from './approval.js';
import { BudgetMeter, budgetReason } from './budget/meter.js';
import { commitDeadline } from './deadlines.js';
import { runEndedHooks } from './hooks.js';
import type { RunInternals, RunTap } from './internals.js';
import { linkCancelSources } from './link-cancel.js';
import { repairHistory } from './repair.js';
import { stopReasonOf, type Outcome, type RunContext } from './run-context.js';
import { SessionLease } from './session-lease.js';
import { RunJournalWriter } from './journal.js';
import { RunningCalls } from './running-calls.js';
import { RunTotals, type Fact } from './totals.js';
import type { Agent, RunOptions } from './types.js';
import { Waits } from './waits.js';

const busy = new WeakMap<Session, object>();
/** The journal writer of every run without a session that does not continue another: it never writes. */
const NO_JOURNAL = new RunJournalWriter(undefined);
/** `nested` of a run none of whose sub-runs suspended (never written: `suspendNested` makes the run's own). */
const NO_NESTED: ReadonlyMap<string, Suspended> = new Map();
/**
 * A fresh id, flat: `crypto.randomUUID()` returns a string of ~20 concatenated pieces (≈ 490 B
 * of heap); reading one character makes V8 flatten it (≈ 60 B). A run keeps its ids as long as it
 * lives, so an idle run holds ≈ 1.3 KiB less (BENCHMARKS.md, memory).
 */
function defaultIds(): string {
  const id = globalThis.crypto.randomUUID();
  void id.charCodeAt(0);
  return id;
}

/**
 * One run's controller (docs/architecture.md). It owns the run token, stamps and delivers every
 * event (the one route: `emit`), folds the run's totals from what it stamps, and decides the end
 * exactly once, on the first of: the loop's outcome, the token firing (any cancel source,
 * synchronously: guarantee 3: terminal before cancel() returns), or the subscriber unsubscribing
 * (the same cancel path, nothing delivered). Where the run waits is `waits` (the phase by structure).
 */
export class RunController<C = unknown> implements RunContext<C>, ControlledRun, Unsubscribable {
  readonly runId: string;
  readonly token: CancelSignal;
  readonly mailbox: Mailbox;
  readonly scheduler: SchedulerLike;
  readonly hopScheduler: SchedulerLike;
  readonly waits = new Waits();
  /** Made on first use: a run that never asks for an approval holds none (BENCHMARKS.md, memory). */
  #approvals: Approvals | undefined;
  #approvalsClosed = false;
  /** The approvals of live sub-runs (any depth) under this root run: its control reaches them. */
  #adopted: Set<Approvals> | undefined;
  readonly totals: RunTotals;
  /**
   * Made with the run when it has a `budget`, else on first use (an estimate: compaction, request shaping): until
   * then it would observe nothing that counts, having no prices to apply and no estimate to calibrate
   * (BENCHMARKS.md, memory).
   */
  #meter: BudgetMeter | undefined;
  /** Made at the first use: only a run with a session takes a lease. */
  #lease: SessionLease | undefined;
  readonly journal: RunJournalWriter;
  /** Made at the first tool call (or `cancelToolCall`): a run that calls no tool holds none. */
  #calls: RunningCalls | undefined;
  #nested: Map<string, Suspended> | undefined;
  #seq = 0;
  #stop: StopRequest | undefined;
  #decided = false;
  #ended = false;
  #unsubscribed = false;
  #busyError: ConcurrentRunError | undefined;
  /** The `telemetry` option's tap, read at `start` (createRun opens it after the controller is made). */
  #tap: RunTap | undefined;
  /**
   * The loop's subscriber, once the loop's subscribe returned (a run that ended while its loop was being subscribed
   * unsubscribes it then, as a Subscription closed before would have done when it was added).
   */
  #body: LoopEnd | undefined;
  readonly #links = new Subscription();
  readonly #ids: (kind: 'run' | 'item') => string;

  constructor(
    readonly agent: Agent<C>,
    readonly opts: RunOptions<C>,
    readonly internals: RunInternals,
    private readonly subscriber: Subscriber<RunEvent>,
    input: string | readonly Item[],
  ) {
    this.#ids = opts.idGenerator ?? defaultIds;
    const { continued } = internals;
    this.runId = continued?.runId ?? this.#ids('run');
    this.scheduler = opts.scheduler ?? asyncScheduler;
    this.hopScheduler = opts.scheduler ?? asapScheduler;
    this.token = internals.token ?? opts.cancel?.child() ?? new CancelSignal();
    this.mailbox = opts.mailbox ?? new Mailbox({ idGenerator: () => this.#ids('item') });
    if (opts.budget !== undefined) this.#meter = new BudgetMeter(opts.budget, agent.contextWindow);
    const { resume } = internals;
    // A resumed run goes on from the suspended run's Items as they are (its open batch included).
    // A continued run with a journalled response goes on with that response's batch open (resumeRun's Items).
    this.totals = resume
      ? RunTotals.resumed(resume.suspended.items, resume.suspended.usage)
      : continued?.pending === true
        ? RunTotals.resumed(input as readonly Item[], ZERO_USAGE) // as journalled: its open batch not paired
        : new RunTotals(initialItems(input, () => this.nextId()));
    if (resume) this.#meter?.carried(resume.suspended.usage);
    // Without a session and not continued, the journal writer never writes: one shared writer serves every such run.
    this.journal =
      opts.session === undefined && continued === undefined
        ? NO_JOURNAL
        : new RunJournalWriter(opts.session, continued?.fromTurn, continued?.journalled);
  }

  /** The run's calls awaiting approval, made at the first use (closed already when the run has ended). */
  get approvals(): Approvals {
    if (this.#approvals === undefined) {
      this.#approvals = new Approvals((call, reason) => emitCancelled(this, call, reason));
      if (this.#approvalsClosed) this.#approvals.close();
    }
    return this.#approvals;
  }

  get nested(): ReadonlyMap<string, Suspended> {
    return this.#nested ?? NO_NESTED;
  }

  suspendNested(callId: string, suspended: Suspended): void {
    (this.#nested ??= new Map()).set(callId, suspended);
  }

  /** The run's session lease (docs/sessions.md), made when a session's load first asks for it. */
  get lease(): SessionLease {
    // A lost lease fails the run; once the outcome is decided (a completed run committing) it is
    // left alone: "the commit cannot be cancelled".
    if (this.#lease === undefined) {
      const lost = (error: unknown): void => this.end({ kind: 'failed', stopReason: 'session_error', error });
      this.#lease = new SessionLease(this.runId, DEFAULTS.session.leaseTtlMs, this.scheduler, lost);
    }
    return this.#lease;
  }

  nextId(): string {
    return this.#ids('item');
  }

  /** The turn the run is in (0 before the first). */
  get turn(): number {
    return this.totals.turn;
  }

  /** True once the outcome is decided; later cancels belong to the next run. */
  get decided(): boolean {
    return this.#decided;
  }

  /** The graceful stop requested, once (docs/run-control.md, "Stop"). */
  get stopping(): StopRequest | undefined {
    return this.#stop;
  }

  /**
   * `RunControl.stop()` on this run (docs/run-control.md, "Stop"): taken once, while the outcome is
   * open. Emits `stop_requested` at once; the stages read `stopping` at their boundaries and end the
   * run there, never synchronously from here, so a cancel in the same tick wins ("cancel beats stop in a
   * tie"). `graceMs` arms a timer on the run's scheduler (dropped with the run's links) that cancels
   * the run with `{ type: 'stop_timeout', graceMs }`.
   */
  stop(request: StopRequest): boolean {
    if (this.#decided || this.#stop !== undefined) return false;
    this.#stop = request;
    const { at: stopAt, graceMs } = request;
    const type = 'stop_requested';
    this.emit(graceMs === undefined ? { type, stopAt } : { type, stopAt, graceMs });
    if (graceMs !== undefined && !this.#decided) {
      const reason = stopTimeoutReason(graceMs);
      this.#links.add(this.scheduler.schedule(() => this.token.cancel(reason), graceMs));
    }
    return true;
  }

  /**
   * `RunControl.cancelToolCall()` on this run (docs/run-control.md, "Per-call cancel"): a running call,
   * else a call awaiting approval.
   */
  cancelToolCall(callId: string, reason: unknown): boolean {
    if (this.#decided) return false;
    return this.#calls?.cancel(callId, reason) === true || this.cancelAwaitingApproval(callId, reason);
  }

  /** `RunControl.approve()` / `reject()` on this run or one of its sub-runs ("Approvals", docs/run-control.md). */
  decide(callId: string, decision: ApprovalDecision): boolean {
    if (this.#decided) return false;
    if (this.approvals.decide(callId, decision)) return true;
    for (const adopted of this.#adopted ?? []) if (adopted.decide(callId, decision)) return true;
    return false;
  }

  /** `RunControl.cancelAwaitingApproval()` on this run or one of its sub-runs: a call awaiting approval only. */
  cancelAwaitingApproval(callId: string, reason: unknown): boolean {
    if (this.#decided) return false;
    if (this.approvals.cancel(callId, reason)) return true;
    for (const adopted of this.#adopted ?? []) if (adopted.cancel(callId, reason)) return true;
    return false;
  }

  /** Links a sub-run's approvals to its root run's (this run's, or on to this run's own root). */
  adoptApprovals(approvals: Approvals): () => void {
    const up = this.internals.adoptApprovals;
    if (up !== undefined) return up(approvals);
    const adopted = (this.#adopted ??= new Set());
    adopted.add(approvals);
    return () => void adopted.delete(approvals);
  }

  /**
   * The one route of every event: folds the draft (and its fact) into the totals, then stamps
   * `runId`, `seq`, `turn`, `at` and delivers it. Once the outcome is decided nothing more is
   * delivered, but what the cleanup reports (a sub-run's usage) still counts.
   */
  emit(draft: RunEventDraft, fact?: Fact): void {
    if (this.#ended) return;
    this.totals.fold(draft, fact);
    this.#meter?.observe(draft, fact);
    if (this.#decided) return;
    // A literal then Object.assign keeps one hidden-class path; `{ ...draft, … }` costs ~2 µs an event on Node 20.
    const { runId, totals } = this;
    const stamped = { type: draft.type, runId, seq: this.#seq++, turn: totals.turn, at: this.scheduler.now() };
    const event = Object.assign(stamped, draft) as RunEvent;
    const tap = this.#tap;
    if (tap !== undefined) tap.event(event, fact === undefined ? undefined : (fact.item ?? fact.result));
    this.subscriber.next(event);
    if (this.#meter?.cancels === true) this.#cancelAtLimit();
  }

  /** `budget.onLimit: 'cancel'`: a limit the reported usage reached cancels the run at once (docs/long-runs.md). */
  #cancelAtLimit(): void {
    if (this.#decided) return;
    const figures = this.meter.reached(this.totals.usage);
    if (figures !== undefined) this.token.cancel(budgetReason(figures));
  }

  /** The tool calls that execute now (see {@link RunContext.calls}). */
  get calls(): RunningCalls {
    return (this.#calls ??= new RunningCalls());
  }

  /** The run's token accounting and budget (see {@link RunContext.meter}). */
  get meter(): BudgetMeter {
    return (this.#meter ??= new BudgetMeter(this.opts.budget, this.agent.contextWindow));
  }

  /** Starts the run: links cancel sources, emits `run_started`, then subscribes the loop, which emits the outcome. */
  start(loop: (rc: RunController<C>) => Observable<Outcome>): void {
    this.#tap = this.internals.tap;
    const { session, control } = this.opts;
    if (session && busy.has(session))
      this.#busyError = new ConcurrentRunError('options.session', 'another run is using this session');
    else if (control && !attachRun(control, this)) {
      this.#busyError = new ConcurrentRunError('options.control', 'another run is using this RunControl');
    } else if (!this.mailbox.acquire(this)) {
      this.#busyError = new ConcurrentRunError('options.mailbox', 'another run is using this mailbox');
    } else if (session) busy.set(session, this);
    const started = { type: 'run_started', agent: this.agent.name } as const;
    if (this.#busyError) {
      this.emit(started);
      return this.end({ kind: 'failed', stopReason: 'configuration_error', error: this.#busyError });
    }
    linkCancelSources(this, this.#links);
    const adopt = this.internals.adoptApprovals;
    if (adopt !== undefined) this.#links.add(adopt(this.approvals));
    if (this.token.isCancelled) {
      this.emit(started);
      return this.end({ kind: 'cancelled', reason: this.token.reason }); // checkpoint 1: turn entry; nothing starts
    }
    // The controller's listener goes first, so the run ends before other listeners react, and
    // before run_started is delivered: a cancel from its handler is honoured at once
    // (guarantee 3: terminal before cancel() returns).
    this.#links.add(this.token.onCancel((reason) => this.end({ kind: 'cancelled', reason })));
    this.emit(started);
    if (this.#decided) return;
    // A resumed run goes on in the turn its suspension was in (its run_started is turn 0, as always).
    const { resume } = this.internals;
    if (resume !== undefined) this.totals.turn = resume.suspended.turn;
    // A continued run goes on after its last journalled turn, and says so first (docs/events.md, run_resumed).
    const { continued } = this.internals;
    if (continued !== undefined) {
      this.totals.turn = continued.fromTurn;
      this.emit({ type: 'run_resumed', fromTurn: continued.fromTurn });
      if (this.#decided) return;
    }
    const body = new LoopEnd(this);
    loop(this).subscribe(body);
    this.#body = body;
    if (this.#decided) body.unsubscribe();
  }

  /** The subscriber unsubscribed: the same cancel path, with nothing delivered. */
  unsubscribe(): void {
    if (this.#ended) return;
    this.#unsubscribed = true;
    if (!this.#decided) this.token.cancel({ type: 'unsubscribed' });
  }

  /** Decides the outcome once; a completed run commits its session first (never cancelled, but bounded). */
  end(outcome: Outcome): void {
    if (this.#decided) return;
    this.#decided = true;
    this.#tap?.ending(outcome.kind === 'suspended' ? 'completed' : outcome.kind);
    // Read before the cleanup leaves every wait: where the run was when it saw the cancel.
    const phase = this.waits.innermost;
    if (outcome.kind === 'failed' && outcome.billed !== undefined) {
      this.totals.usage = addUsage(this.totals.usage, outcome.billed);
    }
    this.#body?.unsubscribe(); // guarantee 11: cleanup starts inner to outer (tools' signals, model requests)
    const { session } = this.opts;
    if (outcome.kind !== 'completed' || !session) return this.#settle(outcome, phase);
    this.#commit(session, outcome);
  }

  /**
   * "The commit cannot be cancelled", but it is bounded: `append(items, { runId, signal })`, the
   * signal aborted at `deadlines.commitMs` on the run's scheduler. A write that fails or passes the
   * deadline ends the run `session_error` (its Items in `partial`, its steering given back). One that
   * lands later stored the steering it holds: "a late write withdraws its steering" (guarantee 7: no
   * steering lost or duplicated). A cancel meanwhile is left for the next run (the outcome is
   * decided). The timer exists only while a write is pending.
   */
  #commit(session: Session, completed: Outcome): void {
    const controller = new AbortController();
    const deadline = new Subscription();
    let ended = false;
    const end = (outcome: Outcome, abort?: TimeoutError): void => {
      if (ended) return;
      ended = true;
      deadline.unsubscribe();
      if (abort) controller.abort(abort);
      this.#settle(outcome, 'turn_entry');
    };
    const failed = (error: unknown): Outcome => ({ kind: 'failed', stopReason: 'session_error', error });
    const suspensionId = this.internals.resume?.suspended.suspensionId;
    const options = { runId: this.runId, signal: controller.signal, ...(suspensionId ? { suspensionId } : {}) };
    const write$ = defer(() => toLastValue(session.append(this.totals.scratch.items, options)));
    // Not unsubscribed at the deadline: a write that has begun finishes, and its landing is heard.
    write$.subscribe({
      error: (error) => end(failed(error)), // after the deadline: nothing stored, the steering is back already
      complete: () => (ended ? this.#landedLate() : end(completed)),
    });
    const commitMs = commitDeadline(this.opts.deadlines);
    if (ended || commitMs === undefined) return;
    deadline.add(
      this.scheduler.schedule(() => {
        const error = new TimeoutError('commit', commitMs);
        end(failed(error), error);
      }, commitMs),
    );
  }

  /**
   * "A late write withdraws its steering": the write that passed `commitMs` stored this run's Items
   * after all, the steering it drained among them. What of it is still queued (given back at the
   * deadline, taken by no run since) is taken off the mailbox and marked delivered, the rule
   * `commitPartial` keeps, so the next run does not deliver it again.
   */
  #landedLate(): void {
    const ids = new Set(this.totals.drained.map((token) => token.id));
    this.mailbox.markDelivered(this.mailbox.takeById(ids));
  }

  #settle(outcome: Outcome, phase: CancelPhase): void {
    if (this.#ended) return;
    const { cancel, session, control } = this.opts;
    const { drained, scratch } = this.totals;
    // Re-arm the caller's token that this run saw fire, before the terminal event
    // (guarantee 5: one cancel, one cancelled run).
    if (outcome.kind === 'cancelled' && cancel?.isCancelled) cancel.reset();
    const onSettled = this.internals.onSettled;
    // Nothing awaits a decision any more: a late approve() answers false.
    this.#approvalsClosed = true;
    this.#approvals?.close();
    if (outcome.kind === 'completed') {
      this.mailbox.markDelivered(drained);
      onSettled?.({ items: scratch.items });
    } else if (outcome.kind === 'suspended') {
      // The steering it drained is inside `suspended.items`: not given back ("suspend mode").
      this.mailbox.markDelivered(drained);
      onSettled?.({ items: [], suspended: outcome.suspended });
    } else {
      this.mailbox.giveBack(drained);
      if (outcome.kind === 'failed') onSettled?.({ error: outcome.error });
    }
    // Only a completed run's commit seals its journal; any other end discards it (the history is unchanged).
    if (outcome.kind !== 'completed') this.journal.discard(this.runId);
    // A run refused as busy never owned the mailbox's queue: nothing of it is this run's to report.
    const undelivered: Undelivered[] = this.#busyError
      ? []
      : this.mailbox.peek().map((t) => ({ id: t.id, content: t.content }));
    this.#links.unsubscribe();
    if (control) detachRun(control, this); // only if this run holds it (a run refused as busy does not)
    if (!this.#busyError) {
      this.mailbox.release(this);
      if (session && busy.get(session) === this) busy.delete(session);
    }
    this.#lease?.release(); // before the terminal event, so a run started from its handler can take it
    this.token.dispose();
    const terminal = this.#terminal(outcome, phase, undelivered);
    runEndedHooks(this, terminal, reportUnhandled);
    this.#ended = true;
    this.#tap?.event(terminal, undefined); // also after an unsubscribe: telemetry sees every run end
    this.#tap = undefined;
    if (!this.#unsubscribed) this.subscriber.next(terminal);
    this.subscriber.complete();
  }

  #terminal(outcome: Outcome, phase: CancelPhase, undelivered: Undelivered[]): TerminalEvent {
    const { usage, scratch } = this.totals;
    const { runId } = this;
    const cost = this.#meter?.cost();
    const at = this.scheduler.now();
    const base = { runId, seq: this.#seq, turn: this.totals.turn, at, undelivered, usage, ...(cost ? { cost } : {}) };
    switch (outcome.kind) {
      case 'completed': {
        const { output, finishReason } = outcome;
        if (outcome.budget !== undefined) {
          const { budget } = outcome;
          return { type: 'run_completed', ...base, stopReason: 'budget', output, finishReason, budget };
        }
        const stopReason = outcome.stopped ? ('stopped' as const) : ('completed' as const);
        const completed = { type: 'run_completed', ...base, stopReason, output, finishReason } as const;
        return 'value' in outcome ? { ...completed, value: outcome.value } : completed;
      }
      case 'suspended': {
        const { finishReason, suspended } = outcome;
        return { type: 'run_completed', ...base, stopReason: 'needs_approval', output: '', finishReason, suspended };
      }
      case 'cancelled': {
        const partial = scratch.partial(() => this.nextId());
        return { type: 'run_cancelled', ...base, stopReason: 'cancelled', reason: outcome.reason, phase, partial };
      }
      case 'failed': {
        const partial = scratch.partial(() => this.nextId());
        const { stopReason } = outcome;
        const error = serializeError(outcome.error);
        const failed = { type: 'run_failed', ...base, error, stopReason, partial } as const;
        return outcome.output === undefined ? failed : { ...failed, output: outcome.output };
      }
    }
  }
}

/**
 * The controller's subscriber of its loop: the outcome, a failure, or an end without an outcome, each decides the
 * run (`end`). One object, where an observer kept three closures and two wrappers for the whole run.
 */
class LoopEnd extends Subscriber<Outcome> {
  constructor(private readonly rc: RunController<any>) {
    super();
  }

  /** Ends the run; a throw is reported as unhandled, as an observer's would be (never back into the loop). */
  #end(outcome: Outcome): void {
    try {
      this.rc.end(outcome);
    } catch (err) {
      reportUnhandled(err);
    }
  }

  protected override _next(outcome: Outcome): void {
    this.#end(outcome);
  }

  protected override _error(error: unknown): void {
    try {
      this.#end({ kind: 'failed', stopReason: stopReasonOf(error), error });
    } finally {
      this.unsubscribe();
    }
  }

  protected override _complete(): void {
    try {
      const error = new Error('the run loop ended without an outcome');
      this.#end({ kind: 'failed', stopReason: 'internal_error', error });
    } finally {
      this.unsubscribe();
    }
  }
}

/**
 * The run's first Items: a string input as one `user` Item; an `Item[]` input repaired on its own
 * ("the history is valid on the wire"), so even a run cancelled at once reports a valid `partial`.
 */
function initialItems(input: string | readonly Item[], newId: () => string): readonly Item[] {
  if (typeof input === 'string') return [{ type: 'user', id: newId(), text: input }];
  return input.every((item) => item.type === 'user') ? input : repairHistory(input, newId);
}

function reportUnhandled(err: unknown): void {
  if (config.onUnhandledError) config.onUnhandledError(err);
  else
    setTimeout(() => {
      throw err;
    });
}
