import { z } from 'zod';
import { SuspendedSchema } from './control/suspended.js';
import { ItemSchema, UsageSchema } from './items.js';

/**
 * The RunEvent union: plain readonly objects discriminated on
 * `type`, with zod schemas so a UI or server can validate them off the wire.
 * Every event has `runId`, `seq` (strictly increasing from 0 within a run),
 * `turn` (0 before the first turn) and `at` (epoch ms from the run's scheduler).
 */

/** Where a cancel was observed: one phase per checkpoint of docs/cancellation.md. */
export const CancelPhaseSchema = z.enum([
  'turn_entry',
  'hook',
  'session_load',
  'model_request',
  'model_stream',
  'stream_gate',
  'rescue',
  'between_tools',
  'wave_boundary',
  'tool_call',
  'backoff',
  'dispatch',
  'approval',
  'compaction',
]);
/** See {@link CancelPhaseSchema}. */
export type CancelPhase = z.infer<typeof CancelPhaseSchema>;

/**
 * Why a run ended: the `stopReason` of every terminal event (docs/events.md, "Stop reasons").
 * `completed`, `stopped` (a graceful stop reached its boundary), `needs_approval` (a run suspended
 * for approval, which commits nothing) and `budget` (a limit of the `budget` option was reached; the run
 * committed like a stopped one) are `run_completed`'s, `cancelled` is `run_cancelled`'s; the
 * others are failures
 * (`run_failed`). `session_error`: the session failed the run: its lease failed or was lost, its load
 * failed or gave what is not an array of Items, or the write of a completed run failed or passed
 * `deadlines.commitMs`. `output_invalid`: the final answer did not match the agent's `output` schema
 * after its repair turns (docs/run-control.md, "Structured output"). `worker_lost`: the worker process
 * running the run (loopctl/bullmq) died or lost its job's lock; written by the process that detected it,
 * with the next `seq` after the last stored event. `guardrail`: a guardrail tripped (docs/guardrails.md): the run
 * committed nothing and its error is a `GuardrailTrippedError`.
 */
export const StopReasonSchema = z.enum([
  'completed',
  'stopped',
  'needs_approval',
  'budget',
  'cancelled',
  'max_turns',
  'model_error',
  'configuration_error',
  'internal_error',
  'session_error',
  'output_invalid',
  'worker_lost',
  'guardrail',
]);
/** See {@link StopReasonSchema}. */
export type StopReason = z.infer<typeof StopReasonSchema>;

/**
 * Where a graceful stop lands (`stop({ at })`, `stop_requested.stopAt`; docs/run-control.md, "Stop"): `'turn_end'` lets
 * the current turn finish (its model response and every tool call it requested) and starts no further
 * model request; `'tool_call_end'` lets running tool calls finish, starts no further call, and pairs
 * every unstarted call with a tool error result "not run: the run was stopped".
 */
export const StopAtSchema = z.enum(['turn_end', 'tool_call_end']);
/** See {@link StopAtSchema}. */
export type StopAt = z.infer<typeof StopAtSchema>;

/**
 * The cancel reason (`run_cancelled.reason`) of a graceful stop whose `graceMs` expired before the
 * run reached its boundary: `{ type: 'stop_timeout', graceMs }` (docs/run-control.md, "Stop").
 */
export const StopTimeoutReasonSchema = z.object({ type: z.literal('stop_timeout'), graceMs: z.number() }).readonly();
/** See {@link StopTimeoutReasonSchema}. */
export type StopTimeoutReason = z.infer<typeof StopTimeoutReasonSchema>;

/** Which limit of the `budget` run option a run reached (docs/long-runs.md, "Budgets"). */
export const BudgetLimitSchema = z.enum(['maxInputTokens', 'maxOutputTokens', 'maxTotalTokens', 'maxCost']);
/** See {@link BudgetLimitSchema}. */
export type BudgetLimit = z.infer<typeof BudgetLimitSchema>;

/**
 * The figures of a budget stop (`run_completed.budget`, and the `budget` cancel reason): the `limit` reached, its
 * value `max`, what the run had `used` of it when it stopped (tokens, or cost in the price table's unit, as the
 * responses reported them), and `estimate`: set when the check before a model call stopped the run, the
 * estimated input tokens (or cost) of the request it did not send (`used + estimate` passes `max`).
 */
export const BudgetFiguresSchema = z
  .object({ limit: BudgetLimitSchema, max: z.number(), used: z.number(), estimate: z.number().optional() })
  .readonly();
/** See {@link BudgetFiguresSchema}. */
export type BudgetFigures = z.infer<typeof BudgetFiguresSchema>;

/**
 * The cancel reason (`run_cancelled.reason`) of a run that reached a limit of its `budget` with
 * `onLimit: 'cancel'`: `{ type: 'budget', limit, max, used, estimate? }` ({@link BudgetFiguresSchema}).
 */
export const BudgetReasonSchema = z
  .object({
    type: z.literal('budget'),
    limit: BudgetLimitSchema,
    max: z.number(),
    used: z.number(),
    estimate: z.number().optional(),
  })
  .readonly();
/** See {@link BudgetReasonSchema}. */
export type BudgetReason = z.infer<typeof BudgetReasonSchema>;

/**
 * What a run's model calls cost (every terminal event's `cost`, when the `budget` option has `prices`): `amount`
 * in the price table's unit (its prices are per million tokens), summed per response by the model that gave it
 * (a sub-run's responses included); `complete` is false when a response came without token counts or from a
 * model the table has no price for (the amount is then a lower bound).
 */
export const CostSchema = z.object({ amount: z.number(), complete: z.boolean() }).readonly();
/** See {@link CostSchema}. */
export type Cost = z.infer<typeof CostSchema>;

/**
 * Why a model response ended, in OpenAI's words where they exist: `stop` (a natural end or a stop sequence),
 * `length` (the output limit), `tool_calls`, `content_filter` (a provider's safety block), `refusal` (the
 * model declined: Anthropic's `refusal` stop reason), `pause_turn` (the provider paused a long turn and
 * expects the response sent back to continue it: Anthropic's `pause_turn`), and `other` for anything a
 * compatible server invents. docs/events.md says what the engine does with each.
 */
export const FinishReasonSchema = z.enum([
  'stop',
  'length',
  'tool_calls',
  'content_filter',
  'refusal',
  'pause_turn',
  'other',
]);
/** See {@link FinishReasonSchema}. */
export type FinishReason = z.infer<typeof FinishReasonSchema>;

/** A steering item the run did not deliver (guarantee 7: no steering lost or duplicated), in mailbox order. */
export const UndeliveredSchema = z.object({ id: z.string(), content: z.string() }).readonly();
/** See {@link UndeliveredSchema}. */
export type Undelivered = z.infer<typeof UndeliveredSchema>;

/** A serialised error: `{ name, message, …typed fields }`. */
export const SerializedErrorSchema = z.looseObject({ name: z.string(), message: z.string() });

const base = {
  runId: z.string(),
  seq: z.number().int().nonnegative(),
  turn: z.number().int().nonnegative(),
  at: z.number(),
};
const ev = <T extends string, S extends z.ZodRawShape>(type: T, shape: S) =>
  z.object({ type: z.literal(type), ...base, ...shape }).readonly();

/** `run_started`: The run began (always the first event, `seq` 0, `turn` 0); `agent` is the agent's name. */
export const RunStartedSchema = ev('run_started', { agent: z.string() });
/**
 * `run_resumed`: a run continued from its journal (`resumeRun()`, docs/sessions.md, "Durable runs"), right after
 * its `run_started`, with the same `runId`: `fromTurn` is its last journalled turn, the one it goes on after (its
 * next event is turn `fromTurn + 1`'s `turn_started`; 0 when only the first turn's response was journalled). That
 * turn goes on from its journalled response when there is one ("No tool runs twice"), else it is done again.
 */
export const RunResumedSchema = ev('run_resumed', { fromTurn: z.number().int().nonnegative() });
/**
 * `turn_started`: A turn began; `turn` counts from 1. Steering is drained right after it and the
 * `turnStarted` hooks ("drain after turnStarted").
 */
export const TurnStartedSchema = ev('turn_started', {});
/**
 * `user_message_injected`: A steering item drained from the mailbox became a `user` Item of this turn; `id` is its
 * token's id.
 */
export const UserMessageInjectedSchema = ev('user_message_injected', { id: z.string(), content: z.string() });
/** Why an attempt after the first one of a model call started (`model_request_started.cause`). */
export const AttemptCauseSchema = z.enum(['retry', 'rescue', 'fallback']);
/** See {@link AttemptCauseSchema}. */
export type AttemptCause = z.infer<typeof AttemptCauseSchema>;

/**
 * A model request was sent. `attempt` > 1 is a retry, a rescue or a fallback of the same
 * model call: its `text_delta`s start the answer over, so a UI clears the answer it is showing.
 * `cause` says which recovery step made it (absent for the first attempt of a model call) and
 * `error` is the serialised error that led to it (absent when none did, e.g. a fallback because
 * the primary's breaker is open).
 */
export const ModelRequestStartedSchema = ev('model_request_started', {
  model: z.string(),
  attempt: z.number().int().positive(),
  stream: z.boolean(),
  cause: AttemptCauseSchema.optional(),
  error: SerializedErrorSchema.optional(),
});
/**
 * `text_delta`: A piece of the answer as it streams (one whole-text delta for a non-streaming request).
 * A handle started with `replay: 'compact'` replays consecutive deltas of one model attempt as one
 * `text_delta` whose `seq` is the last one's, with `fromSeq` (the first one's `seq`) and `offsets`
 * (where each original delta began in `delta`, so `offsets[0]` is 0); a live event has neither.
 */
export const TextDeltaSchema = ev('text_delta', {
  delta: z.string(),
  fromSeq: z.number().int().nonnegative().optional(),
  offsets: z.array(z.number().int().nonnegative()).readonly().optional(),
});
/**
 * `output_delta`: For an agent with an `output` schema, after every `text_delta`: `value` is the
 * answer of this model attempt so far, parsed as partial JSON (an unfinished string, array or object
 * as far as it goes; `undefined` while nothing parses). Not validated: the schema checks the whole
 * answer only (docs/run-control.md, "Structured output").
 */
export const OutputDeltaSchema = ev('output_delta', { value: z.unknown() });
/**
 * `model_response_completed`: The model's response is in: `finishReason`, this call's `usage`, and `refusal` /
 * `reasoning` when the model gave them.
 */
export const ModelResponseCompletedSchema = ev('model_response_completed', {
  finishReason: FinishReasonSchema,
  refusal: z.string().optional(),
  reasoning: z.string().optional(),
  usage: UsageSchema,
});
/**
 * `tool_call_started`: A tool call started (`arguments`: the raw JSON text). Calls never started (denied, invalid,
 * cancelled first) get none.
 */
export const ToolCallStartedSchema = ev('tool_call_started', {
  callId: z.string(),
  name: z.string(),
  arguments: z.string(),
});
/** `tool_call_progress`: A running tool reported progress (`ctx.reportProgress`, MCP progress notifications). */
export const ToolCallProgressSchema = ev('tool_call_progress', {
  callId: z.string(),
  name: z.string(),
  progress: z.unknown(),
});
/** `tool_call_completed`: A tool call finished; `output` is the text the model sees. */
export const ToolCallCompletedSchema = ev('tool_call_completed', {
  callId: z.string(),
  name: z.string(),
  output: z.string(),
});
/**
 * `tool_call_failed`: A tool call ended in a tool error the model sees (thrown, timed out, denied, invalid
 * arguments, unknown tool, not run because of a graceful stop, cancelled on its own with
 * `RunControl.cancelToolCall`). A call cut short by a cancel of the run gets no event: `partial` pairs it
 * as interrupted.
 */
export const ToolCallFailedSchema = ev('tool_call_failed', {
  callId: z.string(),
  name: z.string(),
  error: SerializedErrorSchema,
  /**
   * True for a call cancelled on its own while the run goes on (`cancelToolCall` on a running call or a
   * call awaiting approval, error name `ToolCallCancelledError`); false for every other tool error. A call
   * cut short by a cancel of the run gets no event (it is paired as interrupted in `partial`).
   */
  interrupted: z.boolean(),
  /**
   * Why a call that was not a tool failure never ran or was cut short, typed (never read from the
   * words): `'rejected'` (a person's `reject`, `ToolCallRejectedError`), `'expired'` (its approval
   * request expired unanswered, `ToolApprovalExpiredError`), `'cancelled'` (`cancelToolCall`,
   * `ToolCallCancelledError`). Absent for every other tool error. A run-level cancel has no event.
   */
  outcome: z.enum(['rejected', 'expired', 'cancelled']).optional(),
});
/**
 * `tool_approval_requested`: A call of a tool with `needsApproval` waits for a decision (after every
 * `beforeToolCall` hook of its batch allowed it; `arguments`: the raw JSON text). No
 * `tool_call_started` comes before it is approved; a rejection is a `tool_call_failed`
 * (`ToolCallRejectedError`).
 */
export const ToolApprovalRequestedSchema = ev('tool_approval_requested', {
  callId: z.string(),
  name: z.string(),
  arguments: z.string(),
});
/**
 * `retry_scheduled`: A transient model error will be retried after `delayMs` ms; `attempt` is the
 * attempt that comes ("retry transient errors only").
 */
export const RetryScheduledSchema = ev('retry_scheduled', {
  attempt: z.number().int().positive(),
  delayMs: z.number().nonnegative(),
  error: SerializedErrorSchema,
});
/**
 * `fallback_activated`: The model call moved from `from` to `to` (the fallback model), because of `reason` (an error,
 * or `circuit_open`).
 */
export const FallbackActivatedSchema = ev('fallback_activated', {
  from: z.string(),
  to: z.string(),
  reason: z.string(),
});
/**
 * `stop_requested`: a graceful stop was asked for (`RunControl.stop({ at, graceMs })`), once per run:
 * the run ends at the boundary `stopAt` (the `at` it was given; every event's own `at` is its time)
 * with `run_completed` (`stopReason: 'stopped'`), or is cancelled with a `stop_timeout` reason when
 * `graceMs` (only when given) passes first.
 */
export const StopRequestedSchema = ev('stop_requested', { stopAt: StopAtSchema, graceMs: z.number().optional() });
/** What a compaction does (docs/long-runs.md, "Compaction"): a model writes a summary, or older turns are left out. */
export const CompactionStrategySchema = z.enum(['summary', 'truncate']);
/** See {@link CompactionStrategySchema}. */
export type CompactionStrategy = z.infer<typeof CompactionStrategySchema>;

/**
 * `compaction_started`: the history is being compacted before the turn's request (docs/long-runs.md,
 * "Compaction"): `cause` `'threshold'` (the request's estimate, `tokensBefore`, passed `threshold` of the model's
 * `contextWindow`) or `'context_length'` (the provider refused the request as too long; the request is sent again
 * after it). `strategy`: what the policy does; `items`: how many Items of the history as sent are covered. For a
 * summary, the run waits at `compaction` until `compaction_completed`; its model request's events
 * (`model_request_started`, `retry_scheduled`, …) come between, its text is not streamed as `text_delta`.
 */
export const CompactionStartedSchema = ev('compaction_started', {
  cause: z.enum(['threshold', 'context_length']),
  strategy: CompactionStrategySchema,
  tokensBefore: z.number().int().nonnegative(),
  contextWindow: z.number().int().positive().optional(),
  items: z.number().int().nonnegative(),
});
/**
 * `compaction_completed`: the summary Item `summaryId` was added to the run's Items (committed with the run);
 * requests from now on send it in place of the Items it covers. `strategy` is what was done (`'truncate'` also
 * after a failed summary call with `onFailure: 'truncate'`, `error` then says why); `tokensBefore` / `tokensAfter`
 * are the estimates of the turn's request before and after; `usage`: the summary call's tokens (counted in the
 * run's usage), absent for a truncation that made no call (a truncation after a failed summary call carries what
 * that call billed, when it billed anything).
 */
export const CompactionCompletedSchema = ev('compaction_completed', {
  strategy: CompactionStrategySchema,
  summaryId: z.string(),
  items: z.number().int().nonnegative(),
  tokensBefore: z.number().int().nonnegative(),
  tokensAfter: z.number().int().nonnegative(),
  usage: UsageSchema.optional(),
  error: SerializedErrorSchema.optional(),
});
/**
 * What a guardrail checks (docs/guardrails.md): `'input'` the run's input and the steering injected in a turn,
 * `'output'` the final answer, `'tool_before'` a tool call's arguments, `'tool_after'` its result.
 */
export const GuardrailKindSchema = z.enum(['input', 'output', 'tool_before', 'tool_after']);
/** See {@link GuardrailKindSchema}. */
export type GuardrailKind = z.infer<typeof GuardrailKindSchema>;
const guardrailShape = {
  name: z.string(),
  kind: GuardrailKindSchema,
  /** The tool call checked (`tool_before`, `tool_after`). */
  callId: z.string().optional(),
};
/**
 * `guardrail_started`: a guardrail began checking (docs/guardrails.md); `mode` is how it runs beside the model
 * (`'before'`, `'parallel'`, `'after'`, `'hold'`).
 */
export const GuardrailStartedSchema = ev('guardrail_started', {
  ...guardrailShape,
  mode: z.enum(['before', 'parallel', 'after', 'hold']),
});
/** `guardrail_passed`: the guardrail let what it checked through. */
export const GuardrailPassedSchema = ev('guardrail_passed', guardrailShape);
/**
 * `guardrail_tripped`: the guardrail's tripwire fired. `output`: what the guardrail returned with its verdict;
 * `error`: set when it threw or passed its deadline and failed closed. `action`: `'end_run'` (the run ends
 * `run_failed`, `stopReason: 'guardrail'`, committing nothing) or `'reject_call'` (a tool guardrail: the model reads
 * a refusal as the call's result) or `'refuse_answer'` (an output guardrail with `onTrip: 'refuse'`: the run ends
 * `run_completed` with a refusal in place of the answer). `retracted`: the answer it checked was already streamed
 * as `text_delta`s and is taken back (an output guardrail in `'after'` or `'parallel'` mode).
 */
export const GuardrailTrippedSchema = ev('guardrail_tripped', {
  ...guardrailShape,
  output: z.unknown().optional(),
  error: SerializedErrorSchema.optional(),
  action: z.enum(['end_run', 'reject_call', 'refuse_answer']),
  retracted: z.boolean().optional(),
});
/** `turn_completed`: The turn's model response and tool calls are done. */
export const TurnCompletedSchema = ev('turn_completed', {});
/**
 * `run_completed`: Terminal: the run completed with `output` (the raw text of the final answer) and
 * `finishReason`; its session write (if any) is done. `undelivered`: steering still queued. `value`:
 * for an agent with an `output` schema, the answer parsed and validated by it (absent otherwise).
 * `stopReason`: `'completed'` (a final answer); `'stopped'` (a graceful stop reached its boundary:
 * `output` is the text of the run's last assistant Item, '' if none, `finishReason` that of its last
 * model response, `'stop'` if none, and no `value`); `'needs_approval'`: the run suspended for approval
 * (`approvals: 'suspend'`): `output` is '', nothing was committed, and `suspended` is what `resume()`
 * continues from; `'budget'`: a limit of the `budget` option was reached (`budget` has the figures); `output`
 * and `finishReason` as for `'stopped'`, and the run committed what it had. `cost`: see {@link CostSchema}.
 */
export const RunCompletedSchema = ev('run_completed', {
  stopReason: z.enum(['completed', 'stopped', 'needs_approval', 'budget']),
  output: z.string(),
  value: z.unknown().optional(),
  usage: UsageSchema,
  cost: CostSchema.optional(),
  budget: BudgetFiguresSchema.optional(),
  finishReason: FinishReasonSchema,
  undelivered: z.array(UndeliveredSchema).readonly(),
  suspended: SuspendedSchema.optional(),
});
/**
 * `run_cancelled`: Terminal: the run was cancelled (`stopReason: 'cancelled'`; `reason` exactly as
 * given, `phase` where it was seen). The session is unchanged; `partial` is a consistent prefix of
 * the run's new Items.
 */
export const RunCancelledSchema = ev('run_cancelled', {
  stopReason: z.literal('cancelled'),
  reason: z.unknown(),
  phase: CancelPhaseSchema,
  partial: z.array(ItemSchema).readonly(),
  undelivered: z.array(UndeliveredSchema).readonly(),
  usage: UsageSchema,
  cost: CostSchema.optional(),
});
/**
 * `run_failed`: Terminal: the run failed (`error` serialised; `stopReason` any {@link StopReason} but
 * `completed` and `cancelled`). The session is unchanged by the run; `partial` as for `run_cancelled`.
 * `output`: with `stopReason: 'output_invalid'` only, the raw text of the last (refused) answer.
 */
export const RunFailedSchema = ev('run_failed', {
  error: SerializedErrorSchema,
  stopReason: StopReasonSchema.exclude(['completed', 'stopped', 'needs_approval', 'budget', 'cancelled']),
  output: z.string().optional(),
  partial: z.array(ItemSchema).readonly(),
  undelivered: z.array(UndeliveredSchema).readonly(),
  usage: UsageSchema,
  cost: CostSchema.optional(),
});

/**
 * `subrun_event`: a sub-run's (agent as tool) event, relayed with the `path` of tool names down to it. Lazy: it nests a
 * RunEvent.
 */
export const SubrunEventSchema: z.ZodType<SubrunEvent> = z.lazy(() =>
  ev('subrun_event', { path: z.array(z.string()).readonly(), event: RunEventSchema }),
) as unknown as z.ZodType<SubrunEvent>;

/** Every event a run emits; validate untrusted input with `RunEventSchema.parse`. */
export const RunEventSchema: z.ZodType<RunEvent> = z.lazy(() =>
  z.union([
    RunStartedSchema,
    RunResumedSchema,
    TurnStartedSchema,
    UserMessageInjectedSchema,
    ModelRequestStartedSchema,
    TextDeltaSchema,
    OutputDeltaSchema,
    ModelResponseCompletedSchema,
    ToolCallStartedSchema,
    ToolCallProgressSchema,
    ToolCallCompletedSchema,
    ToolCallFailedSchema,
    ToolApprovalRequestedSchema,
    RetryScheduledSchema,
    FallbackActivatedSchema,
    SubrunEventSchema,
    StopRequestedSchema,
    CompactionStartedSchema,
    CompactionCompletedSchema,
    GuardrailStartedSchema,
    GuardrailPassedSchema,
    GuardrailTrippedSchema,
    TurnCompletedSchema,
    RunCompletedSchema,
    RunCancelledSchema,
    RunFailedSchema,
  ]),
) as unknown as z.ZodType<RunEvent>;

/** A `run_started` event (see {@link RunStartedSchema}). */
export type RunStarted = z.infer<typeof RunStartedSchema>;
/** A `run_resumed` event (see {@link RunResumedSchema}). */
export type RunResumed = z.infer<typeof RunResumedSchema>;
/** A `turn_started` event (see {@link TurnStartedSchema}). */
export type TurnStarted = z.infer<typeof TurnStartedSchema>;
/** A `user_message_injected` event (see {@link UserMessageInjectedSchema}). */
export type UserMessageInjected = z.infer<typeof UserMessageInjectedSchema>;
/** A `model_request_started` event (see {@link ModelRequestStartedSchema}). */
export type ModelRequestStarted = z.infer<typeof ModelRequestStartedSchema>;
/** A `text_delta` event (see {@link TextDeltaSchema}). */
export type TextDelta = z.infer<typeof TextDeltaSchema>;
/** An `output_delta` event (see {@link OutputDeltaSchema}). */
export type OutputDelta = z.infer<typeof OutputDeltaSchema>;
/** A `model_response_completed` event (see {@link ModelResponseCompletedSchema}). */
export type ModelResponseCompleted = z.infer<typeof ModelResponseCompletedSchema>;
/** A `tool_call_started` event (see {@link ToolCallStartedSchema}). */
export type ToolCallStarted = z.infer<typeof ToolCallStartedSchema>;
/** A `tool_call_progress` event (see {@link ToolCallProgressSchema}). */
export type ToolCallProgress = z.infer<typeof ToolCallProgressSchema>;
/** A `tool_call_completed` event (see {@link ToolCallCompletedSchema}). */
export type ToolCallCompleted = z.infer<typeof ToolCallCompletedSchema>;
/** A `tool_call_failed` event (see {@link ToolCallFailedSchema}). */
export type ToolCallFailed = z.infer<typeof ToolCallFailedSchema>;
/** A `tool_approval_requested` event (see {@link ToolApprovalRequestedSchema}). */
export type ToolApprovalRequested = z.infer<typeof ToolApprovalRequestedSchema>;
/** A `retry_scheduled` event (see {@link RetryScheduledSchema}). */
export type RetryScheduled = z.infer<typeof RetryScheduledSchema>;
/** A `fallback_activated` event (see {@link FallbackActivatedSchema}). */
export type FallbackActivated = z.infer<typeof FallbackActivatedSchema>;
/** A `stop_requested` event (see {@link StopRequestedSchema}). */
export type StopRequested = z.infer<typeof StopRequestedSchema>;
/** A `compaction_started` event (see {@link CompactionStartedSchema}). */
export type CompactionStarted = z.infer<typeof CompactionStartedSchema>;
/** A `compaction_completed` event (see {@link CompactionCompletedSchema}). */
export type CompactionCompleted = z.infer<typeof CompactionCompletedSchema>;
/** A `guardrail_started` event (see {@link GuardrailStartedSchema}). */
export type GuardrailStarted = z.infer<typeof GuardrailStartedSchema>;
/** A `guardrail_passed` event (see {@link GuardrailPassedSchema}). */
export type GuardrailPassed = z.infer<typeof GuardrailPassedSchema>;
/** A `guardrail_tripped` event (see {@link GuardrailTrippedSchema}). */
export type GuardrailTripped = z.infer<typeof GuardrailTrippedSchema>;
/** A `turn_completed` event (see {@link TurnCompletedSchema}). */
export type TurnCompleted = z.infer<typeof TurnCompletedSchema>;
/** A `run_completed` event (see {@link RunCompletedSchema}). */
export type RunCompleted = z.infer<typeof RunCompletedSchema>;
/** A `run_cancelled` event (see {@link RunCancelledSchema}). */
export type RunCancelled = z.infer<typeof RunCancelledSchema>;
/** A `run_failed` event (see {@link RunFailedSchema}). */
export type RunFailed = z.infer<typeof RunFailedSchema>;
/** A child run's event relayed by an agent-as-tool call; `path` names the tools from the parent down. */
export interface SubrunEvent {
  readonly type: 'subrun_event';
  readonly runId: string;
  readonly seq: number;
  readonly turn: number;
  readonly at: number;
  readonly path: readonly string[];
  readonly event: RunEvent;
}

/** The terminal events: exactly one per run, always the last (guarantee 1: one terminal event, last). */
export type TerminalEvent = RunCompleted | RunCancelled | RunFailed;

/** Every event of a run, discriminated on `type`. */
export type RunEvent =
  | RunStarted
  | RunResumed
  | TurnStarted
  | UserMessageInjected
  | ModelRequestStarted
  | TextDelta
  | OutputDelta
  | ModelResponseCompleted
  | ToolCallStarted
  | ToolCallProgress
  | ToolCallCompleted
  | ToolCallFailed
  | ToolApprovalRequested
  | RetryScheduled
  | FallbackActivated
  | SubrunEvent
  | StopRequested
  | CompactionStarted
  | CompactionCompleted
  | GuardrailStarted
  | GuardrailPassed
  | GuardrailTripped
  | TurnCompleted
  | TerminalEvent;

/** The `type` strings of {@link RunEvent}. */
export type RunEventType = RunEvent['type'];

/** An event as the engine drafts it, before the run stamps `runId`, `seq`, `turn` and `at`. */
export type RunEventDraft = RunEvent extends infer E
  ? E extends RunEvent
    ? Omit<E, 'runId' | 'seq' | 'turn' | 'at'>
    : never
  : never;

/** @returns true for `run_completed`, `run_cancelled` and `run_failed`. */
export function isTerminalEvent(event: RunEvent): event is TerminalEvent {
  return event.type === 'run_completed' || event.type === 'run_cancelled' || event.type === 'run_failed';
}
