import type { AssistantItem, Item } from '../../items.js';
import { summaryMessage } from '../../engine/compaction/apply.js';
import type { ToolSpec } from '../types.js';
import {
  ANTHROPIC_FAMILY,
  type AnthropicMessage,
  type AnthropicSystemBlock,
  type AnthropicTool,
  type WireBlock,
  wireBlockFault,
} from './wire.js';

type Block = { type: string; [key: string]: unknown };
interface Message {
  role: 'user' | 'assistant';
  content: Block[];
}

/** Where prompt-caching markers go (see `AnthropicCaching`); `ttl` absent = the API's default (5 minutes). */
export interface CacheMarks {
  readonly system: boolean;
  readonly tools: boolean;
  readonly history: boolean;
  readonly ttl?: '5m' | '1h';
}

const NO_CACHE: CacheMarks = { system: false, tools: false, history: false };

/**
 * Converts instructions and a provider-neutral history into the Messages API's `system` and `messages`. Pure;
 * never throws.
 *
 * - non-empty `instructions` → `system: [{ type: 'text', text }]` (else no `system`);
 * - `user` → a `user` message with one `text` block;
 * - `assistant` → an `assistant` message: with `providerParts` of the `anthropic` family, its stored content blocks
 *   replayed unchanged (thinking blocks and their signatures byte for byte), each `tool_use` taking its id, name and
 *   input from the Item's calls in order (the engine may have repaired them); without (another family's Item, none,
 *   or parts with a block out of shape: {@link wireBlockFault}), a `text` block (when non-empty) and one `tool_use`
 *   per call (`input` parsed from `arguments`; text that is not a JSON object is sent as `{}`: its result already
 *   says it was refused);
 * - `tool_result` → a `tool_result` block (`tool_use_id`, `content`, `is_error: true` when it failed) in a `user`
 *   message;
 * - consecutive Items of one role share one message (results of a batch, then steering text), so roles alternate;
 *   an assistant Item with nothing to send (empty and interrupted) is left out.
 *
 * `cache` marks: `system` on the system block, `history` on the last block of the last message that can carry one
 * (never a thinking block). Replayed blocks are copied before a marker is added.
 */
export function toAnthropicMessages(
  instructions: string,
  items: readonly Item[],
  cache: CacheMarks = NO_CACHE,
): { system?: AnthropicSystemBlock[]; messages: AnthropicMessage[] } {
  const marker = { type: 'ephemeral', ...(cache.ttl !== undefined ? { ttl: cache.ttl } : {}) };
  const messages: Message[] = [];
  const push = (role: Message['role'], blocks: Block[]): void => {
    if (blocks.length === 0) return;
    const last = messages.at(-1);
    if (last?.role === role) last.content.push(...blocks);
    else messages.push({ role, content: blocks });
  };
  for (const item of items) {
    switch (item.type) {
      case 'user':
        push('user', [{ type: 'text', text: item.text }]);
        break;
      case 'summary': // a summary the engine did not apply: sent as the user message it stands for
        push('user', [{ type: 'text', text: summaryMessage(item).text }]);
        break;
      case 'assistant':
        push('assistant', assistantBlocks(item));
        break;
      case 'tool_result':
        push('user', [
          {
            type: 'tool_result',
            tool_use_id: item.callId,
            content: item.output,
            ...(item.isError ? { is_error: true } : {}),
          },
        ]);
        break;
    }
  }
  if (cache.history) markLast(messages, marker);
  // The blocks are the SDK's shapes (replayed ones as the API sent them): typed as its params here.
  const out = { messages: messages as unknown as AnthropicMessage[] };
  if (!instructions) return out;
  const system = [{ type: 'text', text: instructions, ...(cache.system ? { cache_control: marker } : {}) }];
  return { system: system as AnthropicSystemBlock[], ...out };
}

const UNMARKABLE = new Set(['thinking', 'redacted_thinking']);

function markLast(messages: Message[], marker: object): void {
  const content = messages.at(-1)?.content;
  if (!content) return;
  for (let i = content.length - 1; i >= 0; i--) {
    if (UNMARKABLE.has(content[i]!.type)) continue;
    content[i] = { ...content[i]!, cache_control: marker };
    return;
  }
}

function assistantBlocks(item: AssistantItem): Block[] {
  const stored = storedContent(item);
  if (stored) {
    const uses = stored.filter((b) => b.type === 'tool_use').length;
    if (uses === item.toolCalls.length) {
      let k = 0;
      return stored.map((block) => (block.type === 'tool_use' ? toolUse(item.toolCalls[k++]!) : { ...block }));
    }
    // The calls no longer match the stored blocks one for one: keep the thinking, rebuild the rest from the Item.
    const thinking = stored.filter((b) => UNMARKABLE.has(b.type)).map((b) => ({ ...b }));
    return [...thinking, ...plainBlocks(item)];
  }
  return plainBlocks(item);
}

function plainBlocks(item: AssistantItem): Block[] {
  const blocks: Block[] = item.text === '' ? [] : [{ type: 'text', text: item.text }];
  for (const call of item.toolCalls) blocks.push(toolUse(call));
  return blocks;
}

function toolUse(call: AssistantItem['toolCalls'][number]): Block {
  return { type: 'tool_use', id: call.callId, name: call.name, input: parseInput(call.arguments) };
}

/** A tool call's `arguments` as the object `tool_use.input` must be: `{}` for empty text or anything else. */
export function parseInput(args: string): Record<string, unknown> {
  if (args.trim() === '') return {};
  try {
    const value: unknown = JSON.parse(args);
    return typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : {};
  } catch {
    return {};
  }
}

/**
 * The stored content blocks of an Item written by this family, or undefined: another family's parts are ignored, and
 * so are parts with a block out of shape ({@link wireBlockFault}, e.g. a saved session edited by hand), which the API
 * would refuse on every later request.
 */
function storedContent(item: AssistantItem): readonly WireBlock[] | undefined {
  const parts = item.providerParts;
  if (parts?.family !== ANTHROPIC_FAMILY) return undefined;
  const content = (parts.data as { content?: unknown } | null)?.content;
  if (!Array.isArray(content)) return undefined;
  return content.every((b) => wireBlockFault(b) === undefined) ? (content as WireBlock[]) : undefined;
}

/**
 * Converts tool specs to Messages API `tools`: `{ name, description, input_schema }`; with `cache.tools` the last one
 * carries `cache_control`.
 */
export function toAnthropicTools(tools: readonly ToolSpec[], cache: CacheMarks = NO_CACHE): AnthropicTool[] {
  const marker = { type: 'ephemeral' as const, ...(cache.ttl !== undefined ? { ttl: cache.ttl } : {}) };
  return tools.map((tool, i) => ({
    name: tool.name,
    description: tool.description,
    input_schema: { type: 'object' as const, ...tool.parameters },
    ...(cache.tools && i === tools.length - 1 ? { cache_control: marker } : {}),
  }));
}
