import type { FinishReason } from '../../events.js';
import type { TokenCounts, ToolCall } from '../../items.js';
import type { ModelResponse } from '../types.js';
import { isObj, list, malformed, obj, requiredText, type WireCode } from '../openai/wire-shape.js';
import { ANTHROPIC_FAMILY, type WireBlock } from './wire.js';

/**
 * Maps a Messages API `stop_reason` to {@link FinishReason}: `end_turn` and `stop_sequence` → `stop`,
 * `max_tokens` and `model_context_window_exceeded` → `length`, `tool_use` → `tool_calls`, `refusal` → `refusal`,
 * `pause_turn` → `pause_turn` (the engine sends the paused content back to continue it: docs/events.md);
 * anything else (or none) → `other`.
 */
export function mapStopReason(reason: string | null | undefined): FinishReason {
  switch (reason) {
    case 'end_turn':
    case 'stop_sequence':
      return 'stop';
    case 'max_tokens':
    case 'model_context_window_exceeded':
      return 'length';
    case 'tool_use':
      return 'tool_calls';
    case 'refusal':
    case 'pause_turn':
      return reason;
    default:
      return 'other';
  }
}

/**
 * Maps a wire `usage` to {@link TokenCounts}. The API's `input_tokens` leaves out cached tokens, so
 * `inputTokens` = `input_tokens + cache_read_input_tokens + cache_creation_input_tokens` (loopctl counts every input
 * token); `cacheReadTokens` / `cacheWriteTokens` are the two cache counts when the server sent them as numbers.
 * @returns undefined when there are no counts.
 */
export function mapAnthropicUsage(usage: unknown): TokenCounts | undefined {
  if (!isObj(usage)) return undefined;
  const num = (key: string): number | undefined =>
    typeof usage[key] === 'number' ? (usage[key] as number) : undefined;
  const input = num('input_tokens');
  const output = num('output_tokens');
  if (input === undefined && output === undefined) return undefined;
  const read = num('cache_read_input_tokens');
  const write = num('cache_creation_input_tokens');
  const inputTokens = (input ?? 0) + (read ?? 0) + (write ?? 0);
  const outputTokens = output ?? 0;
  return {
    inputTokens,
    outputTokens,
    totalTokens: inputTokens + outputTokens,
    ...(read !== undefined ? { cacheReadTokens: read } : {}),
    ...(write !== undefined ? { cacheWriteTokens: write } : {}),
  };
}

/** The message said when `stop_reason: refusal` ended a response with no text. */
export const REFUSAL_WITHOUT_TEXT = 'the model declined to answer (stop_reason: refusal)';

const PLAIN = new Set(['text', 'tool_use']);

/**
 * Builds the response of a complete content list: `text` (the `text` blocks joined), one tool call per `tool_use`
 * (`arguments` the JSON of its `input`, or the streamed `argumentsText` given for it), `reasoning` (the `thinking`
 * blocks joined), `refusal` (for `stop_reason: refusal`: the text, or {@link REFUSAL_WITHOUT_TEXT}), and
 * `providerParts: { family: 'anthropic', data: { content } }` when a block other than text and tool_use is there.
 */
export function assembleResponse(
  content: readonly WireBlock[],
  stopReason: string | null | undefined,
  usage: TokenCounts | undefined,
  argumentsText: ReadonlyMap<WireBlock, string> = new Map(),
): ModelResponse {
  let text = '';
  let reasoning = '';
  const toolCalls: ToolCall[] = [];
  for (const block of content) {
    if (block.type === 'text') text += block['text'] as string;
    else if (block.type === 'thinking') reasoning += block['thinking'] as string;
    else if (block.type === 'tool_use') {
      const args = argumentsText.get(block) ?? JSON.stringify(block['input'] ?? {});
      toolCalls.push({ callId: block['id'] as string, name: block['name'] as string, arguments: args });
    }
  }
  const finishReason = mapStopReason(stopReason);
  const refusal = finishReason === 'refusal' ? text || REFUSAL_WITHOUT_TEXT : '';
  const special = content.some((b) => !PLAIN.has(b.type));
  return {
    text,
    toolCalls,
    finishReason,
    ...(usage ? { usage } : {}),
    ...(refusal ? { refusal } : {}),
    ...(reasoning ? { reasoning } : {}),
    ...(special ? { providerParts: { family: ANTHROPIC_FAMILY, data: { content: content as never } } } : {}),
  };
}

/**
 * Checks one content block's fields (the ones loopctl reads) and returns it as a wire block.
 * @throws ModelOutputError (`code`, `field` set) naming the field of the wrong type.
 */
export function readBlock(value: unknown, code: WireCode, field: string): WireBlock {
  const block = obj(value, code, field);
  const type = requiredText(block['type'], code, `${field}.type`);
  switch (type) {
    case 'text':
      requiredText(block['text'], code, `${field}.text`);
      break;
    case 'thinking':
      requiredText(block['thinking'], code, `${field}.thinking`);
      requiredText(block['signature'] ?? '', code, `${field}.signature`);
      break;
    case 'redacted_thinking':
      requiredText(block['data'], code, `${field}.data`);
      break;
    case 'tool_use':
      requiredText(block['id'], code, `${field}.id`);
      requiredText(block['name'], code, `${field}.name`);
      if (block['input'] !== undefined && !isObj(block['input']))
        malformed(code, `${field}.input`, 'an object', block['input']);
      break;
  }
  return block as WireBlock;
}

const BODY: WireCode = 'malformed_response';

/**
 * Converts a non-streamed Message body to a {@link ModelResponse} (see {@link assembleResponse}).
 * @throws ModelOutputError `malformed_response` naming the field of the wrong shape.
 */
export function messageToResponse(body: unknown): ModelResponse {
  const message = obj(body, BODY, 'response');
  const content = list(message['content'], BODY, 'content').map((b, i) => readBlock(b, BODY, `content[${i}]`));
  const stop = message['stop_reason'];
  if (stop !== null && stop !== undefined && typeof stop !== 'string') malformed(BODY, 'stop_reason', 'a string', stop);
  return assembleResponse(content, stop as string | null | undefined, mapAnthropicUsage(message['usage']));
}
