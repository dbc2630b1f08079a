import { z } from 'zod';

/**
 * The provider-neutral history unit (`Item`): what `run(input)`
 * accepts, what sessions store, what `partial` carries and what adapters turn
 * into wire messages. Plain readonly objects, so they compare and serialise.
 */

/** A tool call as the model asked for it; `arguments` is the raw JSON text. */
export const ToolCallSchema = z.object({ callId: z.string(), name: z.string(), arguments: z.string() }).readonly();
/** See {@link ToolCallSchema}. */
export type ToolCall = z.infer<typeof ToolCallSchema>;

/** A user message; steering items keep their mailbox token's `id`. */
export const UserItemSchema = z.object({ type: z.literal('user'), id: z.string(), text: z.string() }).readonly();
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
export const ItemSchema = z.discriminatedUnion('type', [UserItemSchema, AssistantItemSchema, ToolResultItemSchema]);
/** See {@link ItemSchema}. */
export type Item = z.infer<typeof ItemSchema>;

/**
 * The token counts one model response reports (`ModelResponse.usage`): what a provider gives when
 * the server sent counts. A response without them has no `usage`.
 */
export const TokenCountsSchema = z
  .object({ inputTokens: z.number(), outputTokens: z.number(), totalTokens: z.number() })
  .readonly();
/** See {@link TokenCountsSchema}. */
export type TokenCounts = z.infer<typeof TokenCountsSchema>;

/**
 * Token counts of one or more model calls, summed over every attempt,
 * rescue, fallback and sub-run of a run. `reported` is false when any
 * response summed into it came without counts; the totals count only the
 * responses that reported theirs (so they are then a lower bound).
 */
export const UsageSchema = z
  .object({ inputTokens: z.number(), outputTokens: z.number(), totalTokens: z.number(), reported: z.boolean() })
  .readonly();
/** See {@link UsageSchema}. */
export type Usage = z.infer<typeof UsageSchema>;

/** Zero tokens, reported: the neutral element of {@link addUsage} (a run that made no model call). */
export const ZERO_USAGE: Usage = Object.freeze({ inputTokens: 0, outputTokens: 0, totalTokens: 0, reported: true });

/**
 * Adds `b` to `a`: counts field by field, `reported` ANDed. `b` is one response's
 * {@link TokenCounts} (reported), another {@link Usage}, or `undefined` for a response
 * that reported no usage (it adds nothing and makes the sum not reported).
 */
export function addUsage(a: Usage, b: TokenCounts | Usage | undefined): Usage {
  if (!b) return { ...a, reported: false };
  return {
    inputTokens: a.inputTokens + b.inputTokens,
    outputTokens: a.outputTokens + b.outputTokens,
    totalTokens: a.totalTokens + b.totalTokens,
    reported: a.reported && ('reported' in b ? b.reported : true),
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
