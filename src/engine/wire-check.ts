import type { Item } from '../items.js';

/** Where a list of Items breaks "the history is valid on the wire": the index of the offending Item and why. */
export interface WireFault {
  /** Index into the list (the list's length for a call left without a result at its end). */
  readonly index: number;
  readonly problem: string;
}

/**
 * Checks that `items` can be sent as they are (docs/architecture.md, "the history is valid on the wire"): every
 * tool call of an assistant Item is followed by exactly one result with its id before the next assistant or user
 * Item, no result comes without an earlier call awaiting it, and no call id is used twice. The same rule every
 * provider's wire has (OpenAI's tool messages right after the assistant message, Anthropic's `tool_result`
 * blocks in the next user turn, Gemini's function responses). Returns the first fault, or undefined.
 */
export function wireFault(items: readonly Item[]): WireFault | undefined {
  const open = new Set<string>();
  const seen = new Set<string>();
  const pending = (): string => [...open].map((id) => `"${id}"`).join(', ');
  for (let index = 0; index < items.length; index++) {
    const item = items[index]!;
    if (item.type === 'tool_result') {
      if (!open.delete(item.callId)) {
        const problem = `a tool_result for call "${item.callId}" that no earlier call awaits`;
        return { index, problem };
      }
      continue;
    }
    if (open.size > 0) return { index, problem: `${item.type} Item before the result of call ${pending()}` };
    if (item.type !== 'assistant') continue;
    for (const call of item.toolCalls) {
      if (seen.has(call.callId)) return { index, problem: `call id "${call.callId}" used twice` };
      seen.add(call.callId);
      open.add(call.callId);
    }
  }
  return open.size > 0 ? { index: items.length, problem: `call ${pending()} has no result` } : undefined;
}
