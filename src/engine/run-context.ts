import type { SchedulerLike } from 'rxjs';
import type { CancelSignal } from '../cancel/cancel-signal.js';
import type { Approvals } from '../control/approvals.js';
import type { Suspended } from '../control/suspended.js';
import {
  isCompactionError,
  isConfigurationError,
  isModelCallError,
  isModelOutputError,
  isOutputValidationError,
  isResumeError,
  isTimeoutError,
} from '../errors.js';
import type { BudgetFigures, FinishReason, RunEventDraft, RunFailed } from '../events.js';
import type { Usage } from '../items.js';
import type { StopRequest } from '../control/stop.js';
import type { Mailbox } from '../mailbox/mailbox.js';
import type { BudgetMeter } from './budget/meter.js';
import type { RunInternals } from './internals.js';
import type { RunningCalls } from './running-calls.js';
import type { SessionLease } from './session-lease.js';
import type { Fact, RunTotals } from './totals.js';
import type { Agent, RunOptions } from './types.js';
import type { RunJournalWriter } from './journal.js';
import type { Waits } from './waits.js';

/** How a run ends: the value its loop emits once, or the cancel the controller sees. */
export type Outcome =
  | {
      readonly kind: 'completed';
      readonly output: string;
      readonly finishReason: FinishReason;
      /** A graceful stop reached its boundary: `stopReason: 'stopped'` (docs/run-control.md, "Stop"). */
      readonly stopped?: true;
      /** A limit of the `budget` option was reached: `stopReason: 'budget'` with these figures (docs/long-runs.md). */
      readonly budget?: BudgetFigures;
      /** The structured answer (an agent with `output`); the key is absent otherwise. */
      readonly value?: unknown;
    }
  | {
      readonly kind: 'failed';
      readonly stopReason: RunFailed['stopReason'];
      readonly error: unknown;
      /** `output_invalid`: the raw text of the refused answer. */
      readonly output?: string;
      /** Usage of failed attempts that returned a response, not yet carried by an event. */
      readonly billed?: Usage;
    }
  | { readonly kind: 'cancelled'; readonly reason: unknown }
  /** Suspended for approval (`approvals: 'suspend'`): ends `run_completed` with `needs_approval`, commits nothing. */
  | { readonly kind: 'suspended'; readonly suspended: Suspended; readonly finishReason: FinishReason };

/**
 * What the stages of a run see of it (the controller implements it): who and what it runs, its
 * token, mailbox and schedulers, where it waits, its totals so far (read only: stages change them
 * by emitting), and the one route of every event, `emit`.
 */
export interface RunContext<C = unknown> {
  readonly runId: string;
  readonly agent: Agent<C>;
  readonly opts: RunOptions<C>;
  readonly internals: RunInternals;
  readonly token: CancelSignal;
  readonly mailbox: Mailbox;
  /** Timers, deadlines and `at`. */
  readonly scheduler: SchedulerLike;
  /** Stage hops ("cancel wins at a stage start"). */
  readonly hopScheduler: SchedulerLike;
  readonly waits: Waits;
  /** The run's calls awaiting approval (docs/run-control.md, "Approvals"); the `control` option reaches them. */
  readonly approvals: Approvals;
  /**
   * Links a sub-run's approvals to this run's, so this run's control reaches the sub-run's calls awaiting
   * approval (a sub-run's own link goes on to its root). Returns the unlink.
   */
  adoptApprovals(approvals: Approvals): () => void;
  /** The run's journal in its session (docs/sessions.md, "Durable runs"): written at each turn's entry. */
  readonly journal: RunJournalWriter;
  /** The run's lease on its session: taken by the loop at its start, renewed and released by the controller. */
  readonly lease: SessionLease;
  readonly totals: Readonly<RunTotals>;
  /** The run's token accounting: estimates, their calibration, cost and the `budget` option's limits. */
  readonly meter: BudgetMeter;
  /** The turn the run is in (0 before the first). */
  readonly turn: number;
  /** True once the outcome is decided. */
  readonly decided: boolean;
  /** The graceful stop requested (`RunControl.stop()`), once; undefined while none was. */
  readonly stopping: StopRequest | undefined;
  /** The tool calls that execute now, for `RunControl.cancelToolCall()`. */
  readonly calls: RunningCalls;
  /**
   * The suspensions of this batch's sub-runs (an agent used as a tool whose sub-run suspended for approval, the
   * root in suspend mode), by the call's id: the run suspends once its batch is over ("Nested approvals").
   */
  readonly nested: ReadonlyMap<string, Suspended>;
  /** Records the suspension of the sub-run of call `callId` (see {@link nested}). */
  suspendNested(callId: string, suspended: Suspended): void;
  /** A fresh Item id from the run's id source. */
  nextId(): string;
  /** Stamps and delivers one event; `fact` rides with it into the totals and never reaches a subscriber. */
  emit(draft: RunEventDraft, fact?: Fact): void;
  /** Decides the run's outcome now, once (a later call does nothing): a tool guardrail's trip that ends the run. */
  end(outcome: Outcome): void;
}

/** The stop reason of a run that failed with `error` (docs/events.md, "Stop reasons"). */
export function stopReasonOf(error: unknown): RunFailed['stopReason'] {
  if (isModelCallError(error) || isTimeoutError(error) || isModelOutputError(error)) return 'model_error';
  if (isCompactionError(error)) return 'model_error';
  if (isConfigurationError(error) || isResumeError(error)) return 'configuration_error';
  if (isOutputValidationError(error)) return 'output_invalid';
  return 'internal_error';
}
