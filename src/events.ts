import { z } from 'zod';
import { ItemSchema, UsageSchema } from './items.js';

/**
 * The RunEvent union (DESIGN.md §3): plain readonly objects discriminated on
 * `type`, with zod schemas so a UI or server can validate them off the wire.
 * Every event has `runId`, `seq` (strictly increasing from 0 within a run),
 * `turn` (0 before the first turn) and `at` (epoch ms from the run's scheduler).
 */

/** Where a cancel was observed (DESIGN.md §3 `phase`; the checkpoints of §4). */
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
]);
export type CancelPhase = z.infer<typeof CancelPhaseSchema>;

/** Why a run ended (DESIGN.md §3 `stopReason`). */
export const StopReasonSchema = z.enum([
  'completed',
  'cancelled',
  'max_turns',
  'model_error',
  'configuration_error',
  'internal_error',
]);
export type StopReason = z.infer<typeof StopReasonSchema>;

/** OpenAI's finish reasons, plus `other` for anything a compatible server invents. */
export const FinishReasonSchema = z.enum(['stop', 'length', 'tool_calls', 'content_filter', 'other']);
export type FinishReason = z.infer<typeof FinishReasonSchema>;

/** A steering item the run did not deliver (guarantee 7), in mailbox order. */
export const UndeliveredSchema = z.object({ id: z.string(), content: z.string() }).readonly();
export type Undelivered = z.infer<typeof UndeliveredSchema>;

/** A serialised error: `{ name, message, …typed fields }`. */
export const SerializedErrorSchema = z.looseObject({ name: z.string(), message: z.string() });

const base = { runId: z.string(), seq: z.number().int().nonnegative(), turn: z.number().int().nonnegative(), at: z.number() };
const ev = <T extends string, S extends z.ZodRawShape>(type: T, shape: S) =>
  z.object({ type: z.literal(type), ...base, ...shape }).readonly();

export const RunStartedSchema = ev('run_started', { agent: z.string() });
export const TurnStartedSchema = ev('turn_started', {});
export const UserMessageInjectedSchema = ev('user_message_injected', { id: z.string(), content: z.string() });
/**
 * A model request was sent. `attempt` > 1 is a retry, a rescue or a fallback of the same
 * model call: its `text_delta`s start the answer over, so a UI clears the answer it is showing.
 */
export const ModelRequestStartedSchema = ev('model_request_started', {
  model: z.string(),
  attempt: z.number().int().positive(),
  stream: z.boolean(),
});
export const TextDeltaSchema = ev('text_delta', { delta: z.string() });
export const ModelResponseCompletedSchema = ev('model_response_completed', {
  finishReason: FinishReasonSchema,
  refusal: z.string().optional(),
  reasoning: z.string().optional(),
  usage: UsageSchema,
});
export const ToolCallStartedSchema = ev('tool_call_started', { callId: z.string(), name: z.string(), arguments: z.string() });
export const ToolCallProgressSchema = ev('tool_call_progress', { callId: z.string(), name: z.string(), progress: z.unknown() });
export const ToolCallCompletedSchema = ev('tool_call_completed', { callId: z.string(), name: z.string(), output: z.string() });
export const ToolCallFailedSchema = ev('tool_call_failed', {
  callId: z.string(),
  name: z.string(),
  error: SerializedErrorSchema,
  /** true when the call was cut short by a cancel (it is paired as interrupted in `partial`). */
  interrupted: z.boolean(),
});
export const RetryScheduledSchema = ev('retry_scheduled', {
  attempt: z.number().int().positive(),
  delayMs: z.number().nonnegative(),
  error: SerializedErrorSchema,
});
export const FallbackActivatedSchema = ev('fallback_activated', { from: z.string(), to: z.string(), reason: z.string() });
export const TurnCompletedSchema = ev('turn_completed', {});
export const RunCompletedSchema = ev('run_completed', {
  output: z.string(),
  usage: UsageSchema,
  finishReason: FinishReasonSchema,
  undelivered: z.array(UndeliveredSchema).readonly(),
});
export const RunCancelledSchema = ev('run_cancelled', {
  reason: z.unknown(),
  phase: CancelPhaseSchema,
  partial: z.array(ItemSchema).readonly(),
  undelivered: z.array(UndeliveredSchema).readonly(),
  usage: UsageSchema,
});
export const RunFailedSchema = ev('run_failed', {
  error: SerializedErrorSchema,
  stopReason: StopReasonSchema,
  partial: z.array(ItemSchema).readonly(),
  undelivered: z.array(UndeliveredSchema).readonly(),
  usage: UsageSchema,
});

// `subrun_event` nests a child's event, so its schema is lazy.
export const SubrunEventSchema: z.ZodType<SubrunEvent> = z.lazy(() =>
  ev('subrun_event', { path: z.array(z.string()).readonly(), event: RunEventSchema }),
) as unknown as z.ZodType<SubrunEvent>;

/** Every event a run emits; validate untrusted input with `RunEventSchema.parse`. */
export const RunEventSchema: z.ZodType<RunEvent> = z.lazy(() =>
  z.union([
    RunStartedSchema,
    TurnStartedSchema,
    UserMessageInjectedSchema,
    ModelRequestStartedSchema,
    TextDeltaSchema,
    ModelResponseCompletedSchema,
    ToolCallStartedSchema,
    ToolCallProgressSchema,
    ToolCallCompletedSchema,
    ToolCallFailedSchema,
    RetryScheduledSchema,
    FallbackActivatedSchema,
    SubrunEventSchema,
    TurnCompletedSchema,
    RunCompletedSchema,
    RunCancelledSchema,
    RunFailedSchema,
  ]),
) as unknown as z.ZodType<RunEvent>;

export type RunStarted = z.infer<typeof RunStartedSchema>;
export type TurnStarted = z.infer<typeof TurnStartedSchema>;
export type UserMessageInjected = z.infer<typeof UserMessageInjectedSchema>;
export type ModelRequestStarted = z.infer<typeof ModelRequestStartedSchema>;
export type TextDelta = z.infer<typeof TextDeltaSchema>;
export type ModelResponseCompleted = z.infer<typeof ModelResponseCompletedSchema>;
export type ToolCallStarted = z.infer<typeof ToolCallStartedSchema>;
export type ToolCallProgress = z.infer<typeof ToolCallProgressSchema>;
export type ToolCallCompleted = z.infer<typeof ToolCallCompletedSchema>;
export type ToolCallFailed = z.infer<typeof ToolCallFailedSchema>;
export type RetryScheduled = z.infer<typeof RetryScheduledSchema>;
export type FallbackActivated = z.infer<typeof FallbackActivatedSchema>;
export type TurnCompleted = z.infer<typeof TurnCompletedSchema>;
export type RunCompleted = z.infer<typeof RunCompletedSchema>;
export type RunCancelled = z.infer<typeof RunCancelledSchema>;
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

/** The terminal events: exactly one per run, always the last (guarantee 1). */
export type TerminalEvent = RunCompleted | RunCancelled | RunFailed;

/** Every event of a run, discriminated on `type`. */
export type RunEvent =
  | RunStarted
  | TurnStarted
  | UserMessageInjected
  | ModelRequestStarted
  | TextDelta
  | ModelResponseCompleted
  | ToolCallStarted
  | ToolCallProgress
  | ToolCallCompleted
  | ToolCallFailed
  | RetryScheduled
  | FallbackActivated
  | SubrunEvent
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
