import {
  EMPTY,
  catchError,
  concat,
  concatMap,
  defer,
  from,
  map,
  throwError,
  Observable,
  type ObservableInput,
  type Subscriber,
} from 'rxjs';
import { stage } from '../cancel/stage.js';
import { MaxTurnsError, OutputValidationError } from '../errors.js';
import type { ModelResponseCompleted } from '../events.js';
import { guardInput$, inputSubject } from '../guardrails/input.js';
import { guardAnswer$ } from '../guardrails/output.js';
import { ZERO_USAGE, addUsage, type AssistantItem, type Item, type ToolCall, type UserItem } from '../items.js';
import type { MailboxToken } from '../mailbox/mailbox.js';
import type { ModelProvider, ModelRequest, ModelResponse } from '../model/types.js';
import { limitsOf } from './budget/meter.js';
import { compact$, compactIfDue$, compactionOf } from './compaction/compact.js';
import { isContextLengthError } from './compaction/context-length.js';
import type { Compaction } from './compaction/policy.js';
import type { Runnable } from './approval.js';
import { prepare$ } from './dispatch.js';
import { drain$ } from './drain.js';
import { callHooks$, hasHooks } from './hooks.js';
import type { ModelCalls } from './model-call.js';
import { markRefused, repairResponseCalls, takenIds } from './repair.js';
import { checkOutput, repairMessage, type OutputCheck } from './output.js';
import { buildRequest } from './request.js';
import { shapeRequest$ } from './shape.js';
import { nestedSuspension, suspendOrRun$ } from './suspend.js';
import type { Outcome, RunContext } from './run-context.js';
import { budgetEnd, stoppedOutcome } from './stop.js';
import type { Fact } from './totals.js';
import { EachThen, FirstThenEach, sequence } from './sequence.js';
import { stageAt, waitingAt } from './waits.js';

/** What a turn decides when it is over: another turn, or how the run ends. */
export type Decision = Outcome | typeof NEXT_TURN;
/** The decision to run one more turn. */
export const NEXT_TURN = Object.freeze({ kind: 'next_turn' as const });

/** What every turn of a run shares: the controller, the loaded history and the model calls. */
export interface Turns {
  readonly rc: RunContext<any>;
  readonly history: readonly Item[];
  readonly models: ModelCalls;
  /** Steering queued before the run started ("arrival order"), for the first turn's drain. */
  readonly queuedBefore: ReadonlySet<MailboxToken>;
  /** The first turn's `turn_started` fact: the input repaired against the loaded history, when it had to be. */
  readonly firstTurn: Fact | undefined;
  /** Repair turns given so far for an invalid structured answer (docs/run-control.md, "Structured output"). */
  repairs: number;
  /** The model calls of the run's compactions (docs/long-runs.md, "Compaction"), made at the first one. */
  summaries?: ModelCalls;
}

const TURN_STARTED = Object.freeze({ type: 'turn_started' as const });
const TURN_COMPLETED = Object.freeze({ type: 'turn_completed' as const });
const NONE: ReadonlySet<MailboxToken> = new Set();

type Stamp = 'runId' | 'seq' | 'turn' | 'at';
type Mutable<T> = { -readonly [K in keyof T]: T[K] };

/**
 * One turn, assembled here (docs/architecture.md): its entry stage (checkpoint 1: turn entry,
 * `turn_started`; under a graceful stop the run ends there instead, `stopReason: 'stopped'`), the
 * `turnStarted` hooks, the mailbox drain ("drain after turnStarted"), the request and
 * `beforeModelCall`, the model call (its recovery in model-call.ts), then, with the
 * response: its tools (dispatch.ts) or the final-answer check. Emits the turn's decision.
 */
export function turn$(turns: Turns, n: number): Observable<Decision> {
  return new Observable<Decision>((out) => new Turn(out, turns, n).start());
}

/**
 * A turn's state, one object (BENCHMARKS.md, section 6.1): what `sequence(stageAt('turn_entry', ...), () => body$)`
 * with `body$ = sequence(hooks, drain, model).pipe(concatEach(respond$))` did, with their order of effects
 * ({@link FirstThenEach}), as fields instead of two sequencing levels, their parts arrays, closures and Observables.
 */
class Turn extends FirstThenEach<ModelResponse | Ended, Decision> {
  /** The entry ended the run (a graceful stop, a budget reached): no body. */
  #stopped = false;

  constructor(
    out: Subscriber<Decision>,
    private readonly turns: Turns,
    private readonly n: number,
  ) {
    super(out);
  }

  protected first(): Observable<Decision> {
    return stageAt(this.turns.rc, 'turn_entry', () => this.#enter());
  }

  protected source(): Observable<ModelResponse | Ended> | undefined {
    return this.#stopped ? undefined : this.#body$();
  }

  /** The turn entry, after its hop: a graceful stop or a budget reached ends the run here, else `turn_started`. */
  #enter(): ObservableInput<Decision> {
    const { turns, n } = this;
    const { rc } = turns;
    // A graceful stop ends the run at the turn entry: no turn starts (docs/run-control.md, "Stop").
    if (rc.stopping !== undefined) {
      this.#stopped = true;
      return [stoppedOutcome(rc)];
    }
    // A budget limit the responses reached ends the run here too, before the turn starts (docs/long-runs.md).
    const reached = limitsOf(rc)?.reached(rc.totals.usage);
    if (reached !== undefined) {
      this.#stopped = true;
      return budgetEnd(rc, reached);
    }
    const started = (): Decision[] => {
      rc.emit(TURN_STARTED, n === 1 ? turns.firstTurn : undefined);
      return [];
    };
    // The previous turn is journalled first, in this wait: a cancel during the write leaves the turn before as
    // the last journalled one (docs/sessions.md, "Durable runs"). A synchronous store adds no hop.
    if (!rc.journal.journalsBefore(n)) return started();
    return concat(rc.journal.write$(rc.runId, n - 1, rc.totals.scratch.items), defer(started));
  }

  /** The turn's body: the `turnStarted` hooks, the drain, then the request under the guardrails. */
  #body$(): Observable<ModelResponse | Ended> {
    const { turns, n } = this;
    const { rc } = turns;
    let drainedFrom = 0;
    return sequence<ModelResponse | Ended>(
      callHooks$(rc, 'turnStarted'),
      () => {
        drainedFrom = rc.totals.scratch.items.length;
        return drain$(rc, n === 1 ? turns.queuedBefore : NONE);
      },
      // The input guardrails check the input and the turn's steering beside (or before) the request, the output
      // ones the answer (docs/guardrails.md).
      () => {
        const ended = (o: Outcome) => new Ended(o);
        const answer$ = () => guardAnswer$(rc, model$(turns), (r) => (r instanceof Ended ? undefined : r), ended);
        return guardInput$(rc, inputSubject(rc, n, drainedFrom), answer$, ended);
      },
    );
  }

  /** A value of the body: how the run ends (a budget's check before the request), or the response. */
  protected project(r: ModelResponse | Ended): ObservableInput<Decision> {
    return r instanceof Ended ? [r.outcome] : respond$(this.turns, this.n, r);
  }
}

/** How a run ends instead of a model call (a budget's check before it): never a foreign value, unlike a response. */
class Ended {
  constructor(readonly outcome: Outcome) {}
}

/**
 * The turn's request, shaped by `prepareRequest` (shape.ts), `beforeModelCall`, then the model call (it stages its
 * own requests).
 */
function model$(turns: Turns): Observable<ModelResponse | Ended> {
  const policy = compactionOf(turns.rc.agent);
  if (policy === undefined) return request$(turns);
  return thenRequest$(turns, compactIfDue$(turns, policy)).pipe(
    catchError((err: unknown) => compactAndRetry$(turns, policy, err)),
  );
}

/**
 * A compaction, then the turn's request; unless the budget's check before the summary call ended the run (its
 * outcome, or its token cancelled with `onLimit: 'cancel'`): then nothing is sent.
 */
function thenRequest$(turns: Turns, compaction$: Observable<Outcome>): Observable<ModelResponse | Ended> {
  let ended = false;
  return concat(
    compaction$.pipe(
      map((outcome) => {
        ended = true;
        return new Ended(outcome);
      }),
    ),
    defer(() => (ended || turns.rc.token.isCancelled ? EMPTY : request$(turns))),
  );
}

/**
 * A provider refused the request as too long for its context window (docs/long-runs.md, "Compaction"): one
 * compaction (cause `context_length`), then the request once more (no second retry); any other error, or nothing
 * left to compact, fails as it was.
 */
function compactAndRetry$(turns: Turns, policy: Compaction, err: unknown): Observable<ModelResponse | Ended> {
  if (!isContextLengthError(err)) return throwError(() => err);
  return defer(() => {
    const { rc } = turns;
    const estimate = rc.meter.estimate(buildRequest(rc, turns.history), rc.agent.model);
    const compaction$ = compact$(turns, policy, 'context_length', estimate);
    if (compaction$ === undefined) return throwError(() => err);
    return thenRequest$(turns, compaction$);
  });
}

/** The turn's request, built from the history (summaries applied), shaped, then sent. */
function request$(turns: Turns): Observable<ModelResponse | Ended> {
  const { rc } = turns;
  const request = buildRequest(rc, turns.history);
  if (!hasHooks(rc, 'prepareRequest')) return send$(turns, request, undefined);
  return shapeRequest$(rc, request).pipe(concatMap((shaped) => send$(turns, shaped.request, shaped.model)));
}

/**
 * The request sent: first the budget's check before a call (docs/long-runs.md, "Budgets": what the run used plus
 * the request's estimate over a limit ends the run instead, nothing sent), then `beforeModelCall` and the call.
 */
function send$(
  turns: Turns,
  request: ModelRequest,
  model: ModelProvider | undefined,
): Observable<ModelResponse | Ended> {
  const limits = limitsOf(turns.rc);
  if (limits !== undefined || model !== undefined) {
    const to = model ?? turns.rc.agent.model;
    const estimate = turns.rc.meter.estimate(request, to); // kept for the calibration against the response's usage
    const over = limits?.wouldPass(turns.rc.totals.usage, estimate.inputTokens, to.id);
    if (over !== undefined) return from(budgetEnd(turns.rc, over).map((outcome) => new Ended(outcome)));
  }
  const call$ = turns.models.call(request, model);
  if (!hasHooks(turns.rc, 'beforeModelCall')) return call$;
  return concat(callHooks$(turns.rc, 'beforeModelCall', { request }), call$);
}

/**
 * What follows the response (checkpoint 10: dispatch): it is recorded (`model_response_completed`)
 * while the run waits at `dispatch`; then either its tool calls are prepared (a stage) and run as a
 * batch, the turn completes and the next one starts (or `max_turns` fails the run), or, for a final
 * answer, the turn completes and "the final-answer check" (a stage) decides: an answer refused by
 * the agent's `output` schema gets a repair turn while `outputRetries` and `maxTurns` allow (its
 * `user` Item with the validation error rides on `turn_completed`), else fails the run
 * `output_invalid`; pending steering gets one more turn within `maxTurns`, else the run completes
 * (with the answer's `value` when the agent has `output`).
 */
function respond$(turns: Turns, n: number, response: ModelResponse): Observable<Decision> {
  const { rc } = turns;
  const maxTurns = rc.agent.maxTurns;
  if (response.toolCalls.length === 0 && response.finishReason === 'pause_turn') {
    // The provider paused a long turn (Anthropic's `pause_turn`): the paused content is recorded and the next turn
    // sends it back so the model continues, within `maxTurns` (docs/events.md, "Finish reasons").
    return defer(() => {
      record(turns, response);
      return afterBatch$(rc, n);
    }).pipe(waitingAt(rc.waits, 'dispatch'));
  }
  if (response.toolCalls.length === 0) {
    return defer(() => {
      record(turns, response);
      const schema = rc.agent.output;
      const checked = schema === undefined ? undefined : checkOutput(schema, response.text);
      // A repair turn is a further model request: a graceful stop allows none ("Stop"), the answer is judged as it is.
      const canRepair = turns.repairs < rc.agent.outputRetries && n < maxTurns && rc.stopping === undefined;
      const repair = checked?.ok === false && canRepair;
      if (repair) turns.repairs++;
      rc.emit(TURN_COMPLETED, repair ? { repair: repairItem(rc.nextId(), checked.error) } : undefined);
      return stage(
        rc.token,
        (): Decision[] => {
          const stopping = rc.stopping !== undefined;
          if (repair && !stopping) return [NEXT_TURN];
          if (checked?.ok === false) return [outputInvalid(turns, n, checked.error, response.text)];
          // Under a graceful stop pending steering starts no turn: it stays queued ("Stop").
          if (rc.mailbox.size > 0 && n < maxTurns && !stopping) return [NEXT_TURN];
          const { text: output, finishReason } = response;
          if (checked === undefined) return [{ kind: 'completed', output, finishReason }];
          return [completed(output, finishReason, checked)];
        },
        rc.hopScheduler,
      );
    }).pipe(waitingAt(rc.waits, 'dispatch'));
  }
  const prepared$ = defer(() => {
    const calls = record(turns, response);
    const prepare = (): Observable<readonly Runnable[]> => stage(rc.token, () => prepare$(rc, calls), rc.hopScheduler);
    // With a journalling session the response is journalled before any tool runs: a continue reuses it
    // (docs/sessions.md, "No tool runs twice"). A cancel during the write lands in this wait.
    if (!rc.journal.journalsResponses) return prepare();
    return concat(rc.journal.response$(rc.runId, n, rc.totals.scratch.items), defer(prepare));
  }).pipe(waitingAt(rc.waits, 'dispatch'));
  return batchThenNext$(turns, n, prepared$, response.finishReason);
}

/**
 * The tail of a turn with tool calls: the prepared batch runs (or suspends), then a nested suspension
 * of one of its sub-runs, or `turn_completed` and the next turn.
 */
export function batchThenNext$(
  turns: Turns,
  n: number,
  prepared$: Observable<readonly Runnable[]>,
  finishReason: ModelResponse['finishReason'],
): Observable<Decision> {
  return new Observable<Decision>((out) => new BatchThenNext(out, turns, n, finishReason).subscribeTo(prepared$));
}

/**
 * {@link batchThenNext$}'s state, one object (BENCHMARKS.md, section 6.1): the prepared batch's run (or suspension)
 * and what follows it, as `sequence(prepared$.pipe(concatEach(suspendOrRun$)), () => ...)` would do them.
 */
class BatchThenNext extends EachThen<readonly Runnable[], Decision> {
  constructor(
    out: Subscriber<Decision>,
    private readonly turns: Turns,
    private readonly n: number,
    private readonly finishReason: ModelResponse['finishReason'],
  ) {
    super(out);
  }

  protected project(runnables: readonly Runnable[]): Observable<Decision> {
    const { turns } = this;
    return suspendOrRun$(turns.rc, turns.history, runnables, this.finishReason);
  }

  protected then(): ObservableInput<Decision> {
    const { rc, history } = this.turns;
    // A sub-run of the batch suspended: so does this run ("Nested approvals").
    const nested = nestedSuspension(rc, history, this.finishReason);
    return nested !== undefined ? [nested] : afterBatch$(rc, this.n);
  }
}

/** A batch is over: `turn_completed`, then the next turn, or `max_turns` when this was the last one allowed. */
export function afterBatch$(rc: RunContext<any>, n: number): Observable<Decision> {
  return defer((): Decision[] => {
    rc.emit(TURN_COMPLETED);
    // A graceful stop ends the run at the next turn's entry (a stage: a cancel in the same tick wins).
    if (n < rc.agent.maxTurns || rc.stopping !== undefined) return [NEXT_TURN];
    return [{ kind: 'failed', stopReason: 'max_turns', error: new MaxTurnsError(rc.agent.maxTurns) }];
  });
}

function repairItem(id: string, error: string): UserItem {
  return { type: 'user', id, text: repairMessage(error) };
}

function completed(output: string, finishReason: ModelResponse['finishReason'], checked: OutputCheck): Decision {
  return { kind: 'completed', output, finishReason, value: checked.ok ? checked.value : undefined };
}

/** The run's end for an answer refused once the repairs (`outputRetries`) or the turns (`maxTurns`) are spent. */
function outputInvalid(turns: Turns, n: number, error: string, output: string): Decision {
  const { maxTurns, outputRetries } = turns.rc.agent;
  const noTurn = turns.repairs < outputRetries && n >= maxTurns;
  const message = noTurn ? `${error}; no turn left for a repair (maxTurns ${maxTurns})` : error;
  const failure = new OutputValidationError(message, turns.repairs + 1);
  return { kind: 'failed', stopReason: 'output_invalid', error: failure, output };
}

/**
 * Where a model response becomes an assistant Item, for every provider: its tool calls are
 * repaired first ("the history is valid on the wire"), a refused call is marked for dispatch to
 * pair with its error result, and `model_response_completed` carries the Item to the run's totals.
 */
function record(turns: Turns, response: ModelResponse): readonly ToolCall[] {
  const { rc } = turns;
  let toolCalls = response.toolCalls;
  if (toolCalls.length > 0) {
    const taken = takenIds(rc, turns.history, rc.totals.scratch.items);
    const cutOff = response.finishReason === 'length';
    const repaired = repairResponseCalls(toolCalls, { cutOff, taken, newId: () => rc.nextId() });
    if (repaired.changed) toolCalls = repaired.calls;
    markRefused(repaired.faults);
  }
  const item: AssistantItem = { type: 'assistant', id: rc.nextId(), text: response.text, toolCalls };
  if (response.providerParts !== undefined) (item as Mutable<AssistantItem>).providerParts = response.providerParts;
  // (0, 0, 0, not reported) when the response had no counts
  const usage = addUsage(ZERO_USAGE, response.usage);
  const { finishReason } = response;
  const draft: Mutable<Omit<ModelResponseCompleted, Stamp>> = { type: 'model_response_completed', finishReason, usage };
  if (response.refusal !== undefined) draft.refusal = response.refusal;
  if (response.reasoning !== undefined) draft.reasoning = response.reasoning;
  rc.emit(draft, { item });
  return toolCalls;
}
