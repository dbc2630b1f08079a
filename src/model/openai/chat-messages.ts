import type OpenAI from 'openai';
import { summaryMessage } from '../../engine/compaction/apply.js';
import type { Item } from '../../items.js';
import type { ToolSpec } from '../types.js';

/** A Chat Completions request message (`openai` 6.x `ChatCompletionMessageParam`). */
export type ChatMessage = OpenAI.Chat.Completions.ChatCompletionMessageParam;
/** A Chat Completions tool definition (`openai` 6.x `ChatCompletionTool`). */
export type ChatTool = OpenAI.Chat.Completions.ChatCompletionTool;

/**
 * Converts instructions and a provider-neutral history into Chat Completions
 * `messages` (from the provider-neutral `Item`s). Pure; never throws.
 *
 * - non-empty `instructions` → one leading `{ role: 'system' }` message;
 * - `user` → `{ role: 'user', content }`;
 * - `assistant` → `{ role: 'assistant', content }`, plus `tool_calls`
 *   (`{ id: callId, type: 'function', function: { name, arguments } }`) when it
 *   made calls, in which case empty text is sent as `content: null`;
 * - `tool_result` → `{ role: 'tool', tool_call_id, content: output }` (the wire
 *   has no error flag: `isError` and `interrupted` are carried by the text).
 *
 * @example toChatMessages('Be brief.', [{ type: 'user', id: 'u1', text: 'hi' }])
 *   // → [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'hi' }]
 */
export function toChatMessages(instructions: string, items: readonly Item[]): ChatMessage[] {
  const messages: ChatMessage[] = [];
  if (instructions) messages.push({ role: 'system', content: instructions });
  for (const item of items) {
    switch (item.type) {
      case 'user':
        messages.push({ role: 'user', content: item.text });
        break;
      case 'summary': // a summary the engine did not apply: sent as the user message it stands for
        messages.push({ role: 'user', content: summaryMessage(item).text });
        break;
      case 'assistant':
        if (item.toolCalls.length === 0) {
          messages.push({ role: 'assistant', content: item.text });
        } else {
          messages.push({
            role: 'assistant',
            content: item.text === '' ? null : item.text,
            tool_calls: item.toolCalls.map((call) => ({
              id: call.callId,
              type: 'function' as const,
              function: { name: call.name, arguments: call.arguments },
            })),
          });
        }
        break;
      case 'tool_result':
        messages.push({ role: 'tool', tool_call_id: item.callId, content: item.output });
        break;
    }
  }
  return messages;
}

/**
 * Converts tool specs to Chat Completions `tools`:
 * `{ type: 'function', function: { name, description, parameters } }`.
 */
export function toChatTools(tools: readonly ToolSpec[]): ChatTool[] {
  return tools.map((tool) => ({
    type: 'function' as const,
    function: { name: tool.name, description: tool.description, parameters: { ...tool.parameters } },
  }));
}
