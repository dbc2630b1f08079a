import { APIError } from 'openai';
import type OpenAI from 'openai';
import { ModelCallError } from '../../errors.js';
import type { FinishReason } from '../../events.js';
import type { ToolCall, TokenCounts } from '../../items.js';
import type { ModelEvent, ModelResponse } from '../types.js';
import type { JsonAnswer } from './whole-body.js';
import { isObj, list, malformed, obj, requiredText, text, type Obj, type WireCode } from './wire-shape.js';

const CHUNK: WireCode = 'malformed_chunk';
const BODY: WireCode = 'malformed_response';

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
 * extra fields such as Groq's timings are ignored) to {@link TokenCounts}.
 * `totalTokens` defaults to the sum. @returns undefined when there are no counts.
 */
export function mapChatUsage(usage: unknown): TokenCounts | undefined {
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
 * `push` throws a `ModelOutputError` (`malformed_chunk`, naming the field) for
 * a chunk of the wrong shape; a chunk whose `choices` is null is read as one
 * without choices. {@link finish} throws a retryable `ModelCallError`
 * (`code: 'stream_truncated'`) when no `finish_reason` arrived; once one has,
 * the stream is {@link complete} and a connection lost after it loses nothing.
 */
export class ChatStreamAccumulator {
  private text = '';
  private refusal = '';
  private reasoning = '';
  /** The tool calls by index, made at the first one (a text answer never needs it). */
  #calls: Map<number, PendingCall> | undefined;
  private lastIndex = -1;
  private finishReason: string | undefined;
  private usage: TokenCounts | undefined;
  private chunks = 0;

  private get calls(): Map<number, PendingCall> {
    return (this.#calls ??= new Map());
  }

  /**
   * Reads one chunk. @returns the deltas it carries, in wire order.
   * @throws ModelOutputError (`malformed_chunk`, `field` set) for a chunk of the wrong shape.
   */
  push(chunk: ChatChunk): ModelEvent[] {
    this.chunks++;
    const loose: unknown = chunk;
    if (!isObj(loose)) return malformed(CHUNK, 'chunk', 'an object', loose);
    const groq = loose['x_groq'];
    const usage = mapChatUsage(loose['usage']) ?? (isObj(groq) ? mapChatUsage(groq['usage']) : undefined);
    if (usage) this.usage = usage;
    const events: ModelEvent[] = [];
    const choices = list(loose['choices'], CHUNK, 'choices'); // null: a chunk without choices (usage only)
    for (let i = 0; i < choices.length; i++) {
      const choice = choices[i];
      if (!isObj(choice)) return malformed(CHUNK, `choices[${i}]`, 'an object', choice);
      if ((choice['index'] ?? 0) !== 0) continue;
      const delta = choice['delta'] ?? {};
      if (!isObj(delta)) return malformed(CHUNK, `choices[${i}].delta`, 'an object', delta);
      // Text fields of another type (some servers send content parts) are ignored, as before.
      const content = delta['content'];
      if (typeof content === 'string' && content) {
        this.text += content;
        events.push({ type: 'text_delta', delta: content });
      }
      const refusal = delta['refusal'];
      if (typeof refusal === 'string' && refusal) {
        this.refusal += refusal;
        events.push({ type: 'refusal_delta', delta: refusal });
      }
      const reasoning = delta['reasoning_content'] ?? delta['reasoning'];
      if (typeof reasoning === 'string' && reasoning) {
        this.reasoning += reasoning;
        events.push({ type: 'reasoning_delta', delta: reasoning });
      }
      const entries = delta['tool_calls'];
      if (entries !== undefined && entries !== null) {
        if (!Array.isArray(entries)) return malformed(CHUNK, `choices[${i}].delta.tool_calls`, 'an array', entries);
        for (let k = 0; k < entries.length; k++) {
          const event = this.toolCallDelta(entries[k], `choices[${i}].delta.tool_calls[${k}]`);
          if (event) events.push(event);
        }
      }
      const finish = text(choice['finish_reason'], CHUNK, `choices[${i}].finish_reason`);
      if (finish) this.finishReason = finish;
    }
    return events;
  }

  /** True once a `finish_reason` arrived: the answer is whole (only the usage chunk and `[DONE]` may follow). */
  complete(): boolean {
    return this.finishReason !== undefined;
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
    return buildResponse(
      this.text,
      toolCalls,
      mapChatFinishReason(this.finishReason),
      this.usage,
      this.refusal,
      this.reasoning,
    );
  }

  private toolCallDelta(entry: unknown, field: string): ModelEvent | undefined {
    if (!isObj(entry)) return malformed(CHUNK, field, 'an object', entry);
    const fn = entry['function'] ?? {};
    if (!isObj(fn)) return malformed(CHUNK, `${field}.function`, 'an object', fn);
    const id = text(entry['id'], CHUNK, `${field}.id`) || undefined;
    const name = text(fn['name'], CHUNK, `${field}.function.name`) || undefined;
    const args = text(fn['arguments'], CHUNK, `${field}.function.arguments`) ?? '';
    const index =
      typeof entry['index'] === 'number'
        ? entry['index']
        : id && ![...this.calls.values()].some((c) => c.callId === id)
          ? Math.max(-1, ...this.calls.keys()) + 1
          : Math.max(this.lastIndex, 0);
    this.lastIndex = index;
    let call = this.calls.get(index);
    if (!call) this.calls.set(index, (call = { callId: '', name: '', arguments: '' }));
    if (id) call.callId = id;
    if (name) call.name = name;
    call.arguments += args;
    if (!id && !name && !args) return undefined;
    return {
      type: 'tool_call_delta',
      index,
      ...(id ? { callId: id } : {}),
      ...(name ? { name } : {}),
      argumentsDelta: args,
    };
  }
}

/**
 * Converts a non-streamed Chat Completion (choice 0) to a {@link ModelResponse}:
 * `message.content`, function `tool_calls`, `refusal`, `reasoning_content` /
 * `reasoning`, `finish_reason`, `usage` (or `x_groq.usage`).
 * @throws APIError (status undefined) when the body carries an `error` object,
 *   ModelCallError `invalid_response` when it has no choices, ModelOutputError
 *   `malformed_response` (naming the field) for a body of the wrong shape.
 */
export function chatCompletionToResponse(completion: ChatCompletion): ModelResponse {
  const loose = obj(completion as unknown, BODY, 'response');
  if (loose['error']) throw new APIError(undefined, loose['error'] as object, undefined, undefined);
  const choice = list(loose['choices'], BODY, 'choices')[0];
  if (choice === undefined) throw new ModelCallError('the completion has no choices', { code: 'invalid_response' });
  const message = obj(obj(choice, BODY, 'choices[0]')['message'], BODY, 'choices[0].message');
  const toolCalls: ToolCall[] = [];
  list(message['tool_calls'], BODY, 'choices[0].message.tool_calls').forEach((entry, k) => {
    const field = `choices[0].message.tool_calls[${k}]`;
    const call = obj(entry, BODY, field);
    if (call['type'] !== 'function') return; // other kinds of tool (custom tools) are not loopctl's
    const fn = obj(call['function'], BODY, `${field}.function`);
    toolCalls.push({
      callId: requiredText(call['id'], BODY, `${field}.id`),
      name: requiredText(fn['name'], BODY, `${field}.function.name`),
      arguments: text(fn['arguments'], BODY, `${field}.function.arguments`) ?? '',
    });
  });
  const groq = loose['x_groq'];
  // Text of another type (content parts) is ignored, as in a stream.
  const str = (value: unknown): string => (typeof value === 'string' ? value : '');
  return buildResponse(
    str(message['content']),
    toolCalls,
    mapChatFinishReason(text((choice as Obj)['finish_reason'], BODY, 'choices[0].finish_reason')),
    mapChatUsage(loose['usage']) ?? (isObj(groq) ? mapChatUsage(groq['usage']) : undefined),
    str(message['refusal']),
    str(message['reasoning_content'] ?? message['reasoning']),
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
  usage: TokenCounts | undefined,
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
