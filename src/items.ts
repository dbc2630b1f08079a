import { z } from 'zod';

/**
 * The provider-neutral history unit (`Item`): what `run(input)`
 * accepts, what sessions store, what `partial` carries and what adapters turn
 * into wire messages. Plain readonly objects, so they compare and serialise.
 */

/** A tool call as the model asked for it; `arguments` is the raw JSON text. */
export const ToolCallSchema = z
  .object({ callId: z.string(), name: z.string(), arguments: z.string() })
  .readonly();
/** See {@link ToolCallSchema}. */
export type ToolCall = z.infer<typeof ToolCallSchema>;

/** A user message; steering items keep their mailbox token's `id`. */
export const UserItemSchema = z
  .object({ type: z.literal('user'), id: z.string(), text: z.string() })
  .readonly();
/** See {@link UserItemSchema}. */
export type UserItem = z.infer<typeof UserItemSchema>;

/**
 * An assistant message with the tool calls it made. `interrupted: true` marks
 * text that was streaming when the run was cancelled or failed (guarantee 6: scratchpad: only a completed run commits).
 */
export const AssistantItemSchema = z
  .object({
    type: z.literal('assistant'),
    id: z.string(),
    text: z.string(),
    toolCalls: z.array(ToolCallSchema).readonly(),
    interrupted: z.boolean().optional(),
  })
  .readonly();
/** See {@link AssistantItemSchema}. */
export type AssistantItem = z.infer<typeof AssistantItemSchema>;

/**
 * The result paired with one tool call. `output` is the text the model sees;
 * `interrupted: true` marks a synthetic result for a call cancelled or never
 * started (guarantee 6: scratchpad: only a completed run commits).
 */
export const ToolResultItemSchema = z
  .object({
    type: z.literal('tool_result'),
    callId: z.string(),
    output: z.string(),
    isError: z.boolean(),
    interrupted: z.boolean().optional(),
  })
  .readonly();
/** See {@link ToolResultItemSchema}. */
export type ToolResultItem = z.infer<typeof ToolResultItemSchema>;

/** One history entry, discriminated on `type`. */
export const ItemSchema = z.discriminatedUnion('type', [
  UserItemSchema,
  AssistantItemSchema,
  ToolResultItemSchema,
]);
/** See {@link ItemSchema}. */
export type Item = z.infer<typeof ItemSchema>;

/**
 * Token counts of one or more model calls, summed over every attempt,
 * rescue, fallback and sub-run of a run.
 */
export const UsageSchema = z
  .object({ inputTokens: z.number(), outputTokens: z.number(), totalTokens: z.number() })
  .readonly();
/** See {@link UsageSchema}. */
export type Usage = z.infer<typeof UsageSchema>;

/** A zero usage, the neutral element of {@link addUsage}. */
export const ZERO_USAGE: Usage = Object.freeze({ inputTokens: 0, outputTokens: 0, totalTokens: 0 });

/** Sums two usages field by field. */
export function addUsage(a: Usage, b: Usage | undefined): Usage {
  if (!b) return a;
  return {
    inputTokens: a.inputTokens + b.inputTokens,
    outputTokens: a.outputTokens + b.outputTokens,
    totalTokens: a.totalTokens + b.totalTokens,
  };
}

/**
 * Returns the tool call ids in `items` that have no `tool_result`. A history
 * sent to a model must have none (the check `scriptedModel` and providers do).
 */
export function unpairedToolCalls(items: readonly Item[]): string[] {
  const open = new Set<string>();
  for (const item of items) {
    if (item.type === 'assistant') for (const c of item.toolCalls) open.add(c.callId);
    else if (item.type === 'tool_result') open.delete(item.callId);
  }
  return [...open];
}
