import { toJsonText } from '../describe.js';
import { summaryMessage } from '../engine/compaction/apply.js';
import type { Item } from '../items.js';
import type { ModelRequest } from '../model/types.js';

/** The default longest content attribute, in UTF-16 code units (`captureContent: true`). */
export const DEFAULT_MAX_CHARS = 4096;

/**
 * Content capture, on (a `maxChars`) or off (undefined): "content capture is opt-in". Each
 * content attribute is cut at `maxChars` code units (never inside a surrogate pair) and then
 * marked with `…[truncated N chars]`, N the code units left out.
 */
export function clip(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text;
  let end = maxChars;
  const last = text.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end--; // a high surrogate: keep the pair whole
  return `${text.slice(0, end)}…[truncated ${text.length - end} chars]`;
}

type Part =
  | { type: 'text'; content: string }
  | { type: 'tool_call'; id: string; name: string; arguments: string }
  | { type: 'tool_call_response'; id: string; response: string };

interface Message {
  role: 'user' | 'assistant' | 'tool';
  parts: Part[];
  finish_reason?: string;
}

/** Items as GenAI messages (`gen_ai.input.messages`: role and parts; a tool result has role `tool`). */
export function messagesOf(items: readonly Item[]): Message[] {
  return items.map((item): Message => {
    switch (item.type) {
      case 'user':
        return { role: 'user', parts: [{ type: 'text', content: item.text }] };
      case 'assistant': {
        const parts: Part[] = item.text === '' ? [] : [{ type: 'text', content: item.text }];
        for (const c of item.toolCalls) {
          parts.push({ type: 'tool_call', id: c.callId, name: c.name, arguments: c.arguments });
        }
        return { role: 'assistant', parts };
      }
      case 'tool_result':
        return { role: 'tool', parts: [{ type: 'tool_call_response', id: item.callId, response: item.output }] };
      case 'summary':
        return { role: 'user', parts: [{ type: 'text', content: summaryMessage(item).text }] };
    }
  });
}

/** A request's messages and instructions as the JSON text of `gen_ai.input.messages` / `gen_ai.system_instructions`. */
export function requestContent(request: ModelRequest): { input: string; instructions: string } {
  return {
    input: json(messagesOf(request.items)),
    instructions: json([{ type: 'text', content: request.instructions }]),
  };
}

/** An assistant Item as the JSON text of `gen_ai.output.messages`, with its finish reason. */
export function outputContent(item: Item, finishReason: string): string {
  const [message] = messagesOf([item]);
  return json([{ ...message!, finish_reason: finishReason }]);
}

/** A run's input as `gen_ai.input.messages` JSON text. */
export function inputContent(input: string | readonly Item[]): string {
  return json(messagesOf(typeof input === 'string' ? [{ type: 'user', id: '', text: input }] : input));
}

/** A final answer as `gen_ai.output.messages` JSON text. */
export function answerContent(text: string, finishReason: string): string {
  return json([{ role: 'assistant', parts: [{ type: 'text', content: text }], finish_reason: finishReason }]);
}

function json(value: unknown): string {
  const out = toJsonText(value);
  return out.ok ? out.text : '[unprintable content]';
}
