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
 * What only one provider family understands, kept on the assistant Item its response became (Anthropic's
 * thinking blocks with their signatures, Gemini's thought signatures, cache markers): `family` names the
 * family that wrote it (`'anthropic'`, `'gemini'`, `'openai'`…), `data` is that adapter's own JSON value,
 * opaque to everything else. An adapter of the same family replays it unchanged on the next request; an
 * adapter of another family (a fallback, a session handed to another provider) ignores it, so it is
 * dropped on that wire. Sessions store and reload it unchanged (it is plain JSON).
 */
export const ProviderPartsSchema = z.object({ family: z.string().min(1), data: z.json() }).readonly();
/** See {@link ProviderPartsSchema}. */
export type ProviderParts = z.infer<typeof ProviderPartsSchema>;

/**
 * An assistant message with the tool calls it made. `interrupted: true` marks
 * text that was streaming when the run was cancelled or failed (guarantee 6: scratchpad: only a completed run commits).
 * `providerParts`: what the response's provider family alone understands ({@link ProviderPartsSchema}).
 */
export const AssistantItemSchema = z
  .object({
    type: z.literal('assistant'),
    id: z.string(),
    text: z.string(),
    toolCalls: z.array(ToolCallSchema).readonly(),
    interrupted: z.boolean().optional(),
    providerParts: ProviderPartsSchema.optional(),
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

/**
 * A summary of earlier Items (docs/long-runs.md, "Compaction"): `text` stands for the Items whose ids `covers`
 * lists, in order. Appended to the history like any Item (stores stay append-only, so the covered Items stay
 * stored and readable); the engine applies it when it builds a request: the covered Items are left out and the
 * summary is sent in their place as a `user` message (`summaryMessage`), so no adapter ever sees this type.
 * `covers` names the user, assistant and summary Items of a prefix of the history as the engine sends it at the
 * summary's place (earlier summaries applied), in order; the tool results of a covered assistant Item are covered
 * with it (a result has no id of its own: its `callId` pairs it with its call).
 */
export const SummaryItemSchema = z
  .object({
    type: z.literal('summary'),
    id: z.string(),
    text: z.string(),
    covers: z.array(z.string()).readonly(),
  })
  .readonly();
/** See {@link SummaryItemSchema}. */
export type SummaryItem = z.infer<typeof SummaryItemSchema>;

/** One history entry, discriminated on `type`. */
export const ItemSchema = z.discriminatedUnion('type', [
  UserItemSchema,
  AssistantItemSchema,
  ToolResultItemSchema,
  SummaryItemSchema,
]);
/** See {@link ItemSchema}. */
export type Item = z.infer<typeof ItemSchema>;

/**
 * The token counts one model response reports (`ModelResponse.usage`): what a provider gives when
 * the server sent counts. A response without them has no `usage`. `inputTokens` counts every input
 * token, cached or not; `cacheReadTokens` (of them, read from a prompt cache: Anthropic's
 * `cache_read_input_tokens`, Gemini's `cachedContentTokenCount`, OpenAI's `cached_tokens`) and
 * `cacheWriteTokens` (written to one: Anthropic's `cache_creation_input_tokens`) are there when the
 * server reported them.
 */
export const TokenCountsSchema = z
  .object({
    inputTokens: z.number(),
    outputTokens: z.number(),
    totalTokens: z.number(),
    cacheReadTokens: z.number().optional(),
    cacheWriteTokens: z.number().optional(),
  })
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
  .object({
    inputTokens: z.number(),
    outputTokens: z.number(),
    totalTokens: z.number(),
    reported: z.boolean(),
    cacheReadTokens: z.number().optional(),
    cacheWriteTokens: z.number().optional(),
  })
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
  // A count a model left out (a custom Model, a provider that omits totalTokens) adds 0, never NaN:
  // a missing total is the sum of the others, and a missing input or output count is not reported.
  const input = countOf(b.inputTokens);
  const output = countOf(b.outputTokens);
  const total = countOf(b.totalTokens) ?? (input ?? 0) + (output ?? 0);
  const complete = input !== undefined && output !== undefined;
  const sum: { -readonly [K in keyof Usage]: Usage[K] } = {
    inputTokens: a.inputTokens + (input ?? 0),
    outputTokens: a.outputTokens + (output ?? 0),
    totalTokens: a.totalTokens + total,
    reported: a.reported && complete && ('reported' in b ? b.reported : true),
  };
  // Cache counts appear once any response reported them (summed like the others).
  const read = countOf(b.cacheReadTokens);
  const write = countOf(b.cacheWriteTokens);
  if (a.cacheReadTokens !== undefined || read !== undefined) {
    sum.cacheReadTokens = (a.cacheReadTokens ?? 0) + (read ?? 0);
  }
  if (a.cacheWriteTokens !== undefined || write !== undefined) {
    sum.cacheWriteTokens = (a.cacheWriteTokens ?? 0) + (write ?? 0);
  }
  return sum;
}

/** A finite count, else undefined. */
function countOf(v: unknown): number | undefined {
  return typeof v === 'number' && Number.isFinite(v) ? v : undefined;
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
