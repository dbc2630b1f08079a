import { APIError } from 'openai';
import type OpenAI from 'openai';
import { ModelCallError } from '../../errors.js';
import type { FinishReason } from '../../events.js';
import type { ToolCall, Usage } from '../../items.js';
import type { ModelEvent, ModelResponse } from '../types.js';
import type { JsonAnswer } from './whole-body.js';

/** A streamed Chat Completions chunk (`openai` 6.x type; compatible servers add fields read loosely here). */
export type ChatChunk = OpenAI.Chat.Completions.ChatCompletionChunk;
/** A non-streamed Chat Completion. */
export type ChatCompletion = OpenAI.Chat.Completions.ChatCompletion;

/**
 * Maps a Chat Completions `finish_reason` to {@link FinishReason}:
 * `stop`, `length`, `content_filter` as is; `tool_calls` and the legacy
 * `function_call` → `tool_calls`; anything else (or none) → `other`.
 */
export function mapChatFinishReason(reason: string | null | undefined): FinishReason {
  switch (reason) {
    case 'stop':
    case 'length':
    case 'content_filter':
    case 'tool_calls':
      return reason;
    case 'function_call':
      return 'tool_calls';
    default:
      return 'other';
  }
}

/**
 * Maps a wire usage (`prompt_tokens`, `completion_tokens`, `total_tokens`;
 * extra fields such as Groq's timings are ignored) to {@link Usage}.
 * `totalTokens` defaults to the sum. @returns undefined when there are no counts.
 */
export function mapChatUsage(usage: unknown): Usage | undefined {
  if (typeof usage !== 'object' || usage === null) return undefined;
  const u = usage as Record<string, unknown>;
  const input = u['prompt_tokens'];
  const output = u['completion_tokens'];
  if (typeof input !== 'number' && typeof output !== 'number') return undefined;
  const inputTokens = typeof input === 'number' ? input : 0;
  const outputTokens = typeof output === 'number' ? output : 0;
  const total = u['total_tokens'];
  return { inputTokens, outputTokens, totalTokens: typeof total === 'number' ? total : inputTokens + outputTokens };
}

interface LooseDelta {
  content?: string | null;
  refusal?: string | null;
  reasoning_content?: string | null; // DeepSeek
  reasoning?: string | null; // Groq, OpenRouter, Ollama
  tool_calls?: LooseToolCallDelta[] | null;
}
interface LooseToolCallDelta {
  index?: number;
  id?: string | null;
  function?: { name?: string | null; arguments?: string | null } | null;
}
interface PendingCall {
  callId: string;
  name: string;
  arguments: string;
}

/**
 * Accumulates Chat Completions stream chunks into {@link ModelEvent}s and one
 * final {@link ModelResponse} (only choice index 0 is read).
 *
 * - `delta.content` → `text_delta`; `delta.refusal` → `refusal_delta`;
 *   `delta.reasoning_content` (DeepSeek) or else `delta.reasoning`
 *   (Groq/OpenRouter) → `reasoning_delta`; empty strings emit nothing.
 * - `delta.tool_calls[]` entries are assembled BY `index` (parallel calls, a
 *   first index of 1, a whole call in one chunk all work; an entry without an
 *   index continues the last call, or opens a new one when it has an `id`).
 *   Each entry with an id, a name or argument text emits `tool_call_delta`.
 *   Arguments stay raw text; a call without an id gets `call_<index>`.
 * - usage: the last non-null `usage` on any chunk (the `include_usage` chunk or
 *   a top-level usage on the finish chunk), else `x_groq.usage`.
 *
 * `push` never throws; {@link finish} throws a retryable `ModelCallError`
 * (`code: 'stream_truncated'`) when no `finish_reason` arrived.
 */
export class ChatStreamAccumulator {
  private text = '';
  private refusal = '';
  private reasoning = '';
  private readonly calls = new Map<number, PendingCall>();
  private lastIndex = -1;
  private finishReason: string | undefined;
  private usage: Usage | undefined;
  private chunks = 0;

  /** Reads one chunk. @returns the deltas it carries, in wire order. */
  push(chunk: ChatChunk): ModelEvent[] {
    this.chunks++;
    const loose = chunk as unknown as { usage?: unknown; x_groq?: { usage?: unknown } | null };
    const usage = mapChatUsage(loose.usage) ?? mapChatUsage(loose.x_groq?.usage);
    if (usage) this.usage = usage;
    const events: ModelEvent[] = [];
    for (const choice of chunk.choices ?? []) {
      if ((choice.index ?? 0) !== 0) continue;
      const delta = (choice.delta ?? {}) as LooseDelta;
      if (typeof delta.content === 'string' && delta.content) {
        this.text += delta.content;
        events.push({ type: 'text_delta', delta: delta.content });
      }
      if (typeof delta.refusal === 'string' && delta.refusal) {
        this.refusal += delta.refusal;
        events.push({ type: 'refusal_delta', delta: delta.refusal });
      }
      const reasoning = delta.reasoning_content ?? delta.reasoning;
      if (typeof reasoning === 'string' && reasoning) {
        this.reasoning += reasoning;
        events.push({ type: 'reasoning_delta', delta: reasoning });
      }
      for (const entry of delta.tool_calls ?? []) {
        const event = this.toolCallDelta(entry);
        if (event) events.push(event);
      }
      if (choice.finish_reason) this.finishReason = choice.finish_reason;
    }
    return events;
  }

  /** Ends the stream. @returns the response. @throws ModelCallError when no `finish_reason` was seen. */
  finish(): ModelResponse {
    if (this.finishReason === undefined) {
      throw new ModelCallError('the stream ended before a finish_reason arrived', {
        retryable: true,
        code: 'stream_truncated',
        streamStarted: this.chunks > 0,
      });
    }
    const toolCalls: ToolCall[] = [...this.calls.entries()]
      .sort(([a], [b]) => a - b)
      .map(([index, c]) => ({ callId: c.callId || `call_${index}`, name: c.name, arguments: c.arguments }));
    return buildResponse(this.text, toolCalls, mapChatFinishReason(this.finishReason), this.usage, this.refusal, this.reasoning);
  }

  private toolCallDelta(entry: LooseToolCallDelta): ModelEvent | undefined {
    const index =
      typeof entry.index === 'number'
        ? entry.index
        : entry.id && ![...this.calls.values()].some((c) => c.callId === entry.id)
          ? Math.max(-1, ...this.calls.keys()) + 1
          : Math.max(this.lastIndex, 0);
    this.lastIndex = index;
    let call = this.calls.get(index);
    if (!call) this.calls.set(index, (call = { callId: '', name: '', arguments: '' }));
    const id = entry.id || undefined;
    const name = entry.function?.name || undefined;
    const args = entry.function?.arguments ?? '';
    if (id) call.callId = id;
    if (name) call.name = name;
    call.arguments += args;
    if (!id && !name && !args) return undefined;
    return { type: 'tool_call_delta', index, ...(id ? { callId: id } : {}), ...(name ? { name } : {}), argumentsDelta: args };
  }
}

/**
 * Converts a non-streamed Chat Completion (choice 0) to a {@link ModelResponse}:
 * `message.content`, function `tool_calls`, `refusal`, `reasoning_content` /
 * `reasoning`, `finish_reason`, `usage` (or `x_groq.usage`).
 * @throws APIError (status undefined) when the body carries an `error` object,
 *   ModelCallError `invalid_response` when it has no choices.
 */
export function chatCompletionToResponse(completion: ChatCompletion): ModelResponse {
  const loose = completion as unknown as { error?: unknown; x_groq?: { usage?: unknown } | null };
  if (loose.error) throw new APIError(undefined, loose.error as object, undefined, undefined);
  const choice = completion.choices?.[0];
  if (!choice) throw new ModelCallError('the completion has no choices', { code: 'invalid_response' });
  const message = choice.message as typeof choice.message & { reasoning_content?: string | null; reasoning?: string | null };
  const toolCalls: ToolCall[] = [];
  for (const call of message.tool_calls ?? []) {
    if (call.type === 'function') toolCalls.push({ callId: call.id, name: call.function.name, arguments: call.function.arguments ?? '' });
  }
  return buildResponse(
    message.content ?? '',
    toolCalls,
    mapChatFinishReason(choice.finish_reason),
    mapChatUsage(completion.usage) ?? mapChatUsage(loose.x_groq?.usage),
    message.refusal ?? '',
    message.reasoning_content ?? message.reasoning ?? '',
  );
}

/**
 * A complete Chat Completion sent where a stream was asked for: an object
 * with a non-empty `choices` array (or an `error` object, which throws as in
 * {@link chatCompletionToResponse}) is read as one; anything else is not.
 */
export const CHAT_COMPLETION_BODY: JsonAnswer = {
  expected: 'a chat completion',
  read(body) {
    if (typeof body !== 'object' || body === null) return undefined;
    const loose = body as { choices?: unknown; error?: unknown };
    const complete = Array.isArray(loose.choices) && loose.choices.length > 0;
    const failed = typeof loose.error === 'object' && loose.error !== null;
    return complete || failed ? chatCompletionToResponse(body as ChatCompletion) : undefined;
  },
};

/** Builds a response, leaving out optional fields that are empty. */
export function buildResponse(
  text: string,
  toolCalls: readonly ToolCall[],
  finishReason: FinishReason,
  usage: Usage | undefined,
  refusal: string,
  reasoning: string,
): ModelResponse {
  return {
    text,
    toolCalls,
    finishReason,
    ...(usage ? { usage } : {}),
    ...(refusal ? { refusal } : {}),
    ...(reasoning ? { reasoning } : {}),
  };
}
