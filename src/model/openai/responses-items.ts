import { APIError } from 'openai';
import { summaryMessage } from '../../engine/compaction/apply.js';
import type OpenAI from 'openai';
import type { FinishReason } from '../../events.js';
import type { Item, ToolCall, TokenCounts } from '../../items.js';
import type { ModelResponse, ToolSpec } from '../types.js';
import { buildResponse } from './chat-stream.js';
import type { JsonAnswer } from './whole-body.js';
import { list, obj, requiredText, text as optionalText, type WireCode } from './wire-shape.js';

/** A Responses API input item (`openai` 6.x `ResponseInputItem`). */
export type ResponsesInputItem = OpenAI.Responses.ResponseInputItem;
/** A Responses API function tool (`openai` 6.x `FunctionTool`). */
export type ResponsesTool = OpenAI.Responses.FunctionTool;
/** A Responses API response object (final, or inside `response.completed`). */
export type ResponsesResponse = OpenAI.Responses.Response;

/**
 * Converts a provider-neutral history into Responses API `input` items
 * (instructions go in the request's top-level `instructions`, not here):
 *
 * - `user` → `{ type: 'message', role: 'user', content }`;
 * - `assistant` → `{ type: 'message', role: 'assistant', content }` when it
 *   has text, then one `{ type: 'function_call', call_id, name, arguments }`
 *   per tool call;
 * - `tool_result` → `{ type: 'function_call_output', call_id, output }`.
 *
 * Pure; never throws.
 */
export function toResponsesInput(items: readonly Item[]): ResponsesInputItem[] {
  const input: ResponsesInputItem[] = [];
  for (const item of items) {
    switch (item.type) {
      case 'user':
        input.push({ type: 'message', role: 'user', content: item.text });
        break;
      case 'summary': // a summary the engine did not apply: sent as the user message it stands for
        input.push({ type: 'message', role: 'user', content: summaryMessage(item).text });
        break;
      case 'assistant':
        if (item.text !== '') input.push({ type: 'message', role: 'assistant', content: item.text });
        for (const call of item.toolCalls) {
          input.push({ type: 'function_call', call_id: call.callId, name: call.name, arguments: call.arguments });
        }
        break;
      case 'tool_result':
        input.push({ type: 'function_call_output', call_id: item.callId, output: item.output });
        break;
    }
  }
  return input;
}

/**
 * Converts tool specs to Responses function tools:
 * `{ type: 'function', name, description, parameters, strict: false }`.
 * `strict` is sent as false because the Responses API otherwise applies strict
 * schemas, which plain zod / MCP schemas do not satisfy (Chat parity).
 */
export function toResponsesTools(tools: readonly ToolSpec[]): ResponsesTool[] {
  return tools.map((tool) => ({
    type: 'function' as const,
    name: tool.name,
    description: tool.description,
    parameters: { ...tool.parameters },
    strict: false,
  }));
}

/** What a stream accumulated, used where the final `output` lacks it. */
export interface ResponsesAccumulated {
  readonly text: string;
  readonly refusal: string;
  readonly reasoning: string;
  readonly toolCalls: readonly ToolCall[];
}

const NOTHING: ResponsesAccumulated = { text: '', refusal: '', reasoning: '', toolCalls: [] };

/**
 * Converts a final Responses object to a {@link ModelResponse}. Text is the
 * concatenation of `output_text` parts of `message` items; refusal of
 * `refusal` parts; reasoning of `reasoning_text` content (else summaries) of
 * `reasoning` items; tool calls from `function_call` items. Where `output`
 * yields nothing for a field, `streamed` (from deltas) is used instead.
 * finishReason: `incomplete` → `length` (max_output_tokens) / `content_filter`
 * / `other`; otherwise `tool_calls` when there are calls, else `stop`.
 * @throws APIError (status undefined) for a `failed` response with an `error`;
 *   ModelOutputError (`shape.code`, default `malformed_response`) naming the
 *   field (after `shape.prefix`) for a response of the wrong shape.
 */
export function responseToModelResponse(
  response: ResponsesResponse,
  streamed: ResponsesAccumulated = NOTHING,
  shape: { readonly code: WireCode; readonly prefix: string } = { code: 'malformed_response', prefix: '' },
): ModelResponse {
  const { code, prefix } = shape;
  const r = obj(response as unknown, code, prefix === '' ? 'response' : prefix.slice(0, -1));
  if (r['status'] === 'failed' && r['error']) {
    throw new APIError(undefined, r['error'] as object, undefined, undefined);
  }
  let text = '';
  let refusal = '';
  let reasoning = '';
  let summary = '';
  const toolCalls: ToolCall[] = [];
  list(r['output'], code, `${prefix}output`).forEach((entry, i) => {
    const at = `${prefix}output[${i}]`;
    const item = obj(entry, code, at);
    if (item['type'] === 'message') {
      list(item['content'], code, `${at}.content`).forEach((p, k) => {
        const part = obj(p, code, `${at}.content[${k}]`);
        const field = `${at}.content[${k}]`;
        if (part['type'] === 'output_text') text += requiredText(part['text'], code, `${field}.text`);
        else if (part['type'] === 'refusal') refusal += requiredText(part['refusal'], code, `${field}.refusal`);
      });
    } else if (item['type'] === 'function_call') {
      toolCalls.push({
        callId: requiredText(item['call_id'], code, `${at}.call_id`),
        name: requiredText(item['name'], code, `${at}.name`),
        arguments: optionalText(item['arguments'], code, `${at}.arguments`) ?? '',
      });
    } else if (item['type'] === 'reasoning') {
      list(item['content'], code, `${at}.content`).forEach((p, k) => {
        const part = obj(p, code, `${at}.content[${k}]`);
        if (part['type'] !== 'reasoning_text') return;
        reasoning += requiredText(part['text'], code, `${at}.content[${k}].text`);
      });
      list(item['summary'], code, `${at}.summary`).forEach((p, k) => {
        summary += requiredText(obj(p, code, `${at}.summary[${k}]`)['text'], code, `${at}.summary[${k}].text`);
      });
    }
  });
  const calls = toolCalls.length > 0 ? toolCalls : streamed.toolCalls;
  return buildResponse(
    text || streamed.text,
    calls,
    responsesFinishReason(r as unknown as ResponsesResponse, calls.length > 0),
    mapResponsesUsage(r['usage']),
    refusal || streamed.refusal,
    reasoning || summary || streamed.reasoning,
  );
}

/**
 * A complete Responses object sent where a stream was asked for: an object
 * with an `output` array and `object: 'response'` or a `status` (a failed one
 * throws as in {@link responseToModelResponse}), or a body with an `error`
 * object (thrown as an in-stream error); anything else is not.
 */
export const RESPONSE_BODY: JsonAnswer = {
  expected: 'a Responses object',
  read(body) {
    if (typeof body !== 'object' || body === null) return undefined;
    const loose = body as { output?: unknown; object?: unknown; status?: unknown; error?: unknown };
    if (Array.isArray(loose.output) && (loose.object === 'response' || typeof loose.status === 'string')) {
      return responseToModelResponse(body as ResponsesResponse);
    }
    const error = loose.error;
    if (typeof error === 'object' && error !== null) throw new APIError(undefined, error, undefined, undefined);
    return undefined;
  },
};

function responsesFinishReason(response: ResponsesResponse, hasToolCalls: boolean): FinishReason {
  if (response.status === 'incomplete') {
    const reason = response.incomplete_details?.reason;
    return reason === 'max_output_tokens' ? 'length' : reason === 'content_filter' ? 'content_filter' : 'other';
  }
  if (response.status === 'completed' || response.status === undefined) return hasToolCalls ? 'tool_calls' : 'stop';
  return 'other';
}

/** Maps Responses usage (`input_tokens`, `output_tokens`, `total_tokens`) to {@link TokenCounts}. */
export function mapResponsesUsage(usage: unknown): TokenCounts | undefined {
  if (typeof usage !== 'object' || usage === null) return undefined;
  const u = usage as Record<string, unknown>;
  const input = typeof u['input_tokens'] === 'number' ? u['input_tokens'] : undefined;
  const output = typeof u['output_tokens'] === 'number' ? u['output_tokens'] : undefined;
  if (input === undefined && output === undefined) return undefined;
  const total = u['total_tokens'];
  return {
    inputTokens: input ?? 0,
    outputTokens: output ?? 0,
    totalTokens: typeof total === 'number' ? total : (input ?? 0) + (output ?? 0),
  };
}
