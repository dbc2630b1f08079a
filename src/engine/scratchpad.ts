import type { AssistantItem, Item, ToolCall, ToolResultItem } from '../items.js';

/**
 * The synthetic result that pairs a tool call that got no result
 * (guarantee 6: scratchpad: only a completed run commits).
 */
export function interruptedResult(callId: string): ToolResultItem {
  return { type: 'tool_result', callId, output: 'interrupted: the run was stopped before this call finished', isError: true, interrupted: true };
}

/**
 * A run's working copy of its new Items (guarantee 6: scratchpad: only a
 * completed run commits). Only a completed run commits `items`; any other outcome
 * carries `partial()`: a consistent prefix where every tool call is paired,
 * streamed text is kept and marked interrupted, and calls whose arguments
 * were still streaming are dropped.
 */
export class Scratchpad {
  /** New Items in order: user input, injected steering, assistant turns and tool results of finished batches. */
  readonly items: Item[];
  /** Text of the response being streamed now ('' when none). */
  streamingText = '';
  /** The tool calls of the batch in flight and the results they have so far. */
  #batch: { calls: readonly ToolCall[]; results: Map<string, ToolResultItem> } | undefined;

  constructor(input: readonly Item[]) {
    this.items = input.slice();
  }

  /** Replaces the input with its repaired form; called before anything else is added (the first turn's start). */
  replaceInput(input: readonly Item[]): void {
    this.items.splice(0, this.items.length, ...input);
  }

  add(item: Item): void {
    this.items.push(item);
  }

  /** Inserts `item` at `index` of `items` (steering placed ahead of the input's last user Item: "arrival order"). */
  insert(index: number, item: Item): void {
    this.items.splice(index, 0, item);
  }

  /** Records a finished response; its tool calls open a batch that must be paired. */
  addResponse(item: AssistantItem): void {
    this.streamingText = '';
    this.items.push(item);
    if (item.toolCalls.length > 0) this.#batch = { calls: item.toolCalls, results: new Map() };
  }

  /** Records one call's result (in any order; `endBatch` puts them in call order). */
  addResult(result: ToolResultItem): void {
    this.#batch?.results.set(result.callId, result);
  }

  /** Moves the batch's results into `items`, in call order. */
  endBatch(): void {
    const batch = this.#batch;
    if (!batch) return;
    this.#batch = undefined;
    for (const call of batch.calls) this.items.push(batch.results.get(call.callId) ?? interruptedResult(call.callId));
  }

  /** The consistent prefix a cancelled or failed run reports. */
  partial(interruptedId: () => string): Item[] {
    const out = [...this.items];
    const batch = this.#batch;
    if (batch) for (const call of batch.calls) out.push(batch.results.get(call.callId) ?? interruptedResult(call.callId));
    else if (this.streamingText !== '')
      out.push({ type: 'assistant', id: interruptedId(), text: this.streamingText, toolCalls: [], interrupted: true });
    return out;
  }
}
