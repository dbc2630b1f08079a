import type { AssistantItem, Item, ToolCall, ToolResultItem } from '../items.js';

/**
 * The synthetic result that pairs a tool call that got no result
 * (guarantee 6: scratchpad: only a completed run commits).
 */
export function interruptedResult(callId: string): ToolResultItem {
  return {
    type: 'tool_result',
    callId,
    output: 'interrupted: the run was stopped before this call finished',
    isError: true,
    interrupted: true,
  };
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

  /**
   * A resumed run's scratchpad (docs/run-control.md, "Approvals"): `items` as a suspension holds them,
   * the last assistant Item's calls the open batch, the tool results after it that batch's results.
   */
  static resumed(items: readonly Item[]): Scratchpad {
    let open = items.length;
    while (open > 0 && items[open - 1]!.type === 'tool_result') open--;
    const pad = new Scratchpad(items.slice(0, open));
    const last = items[open - 1];
    if (last?.type === 'assistant' && last.toolCalls.length > 0) {
      const results = new Map<string, ToolResultItem>();
      for (const item of items.slice(open)) if (item.type === 'tool_result') results.set(item.callId, item);
      pad.#batch = { calls: last.toolCalls, results };
    }
    return pad;
  }

  /** The open batch's calls that have no result yet (a resumed run's calls to dispatch), in call order. */
  unanswered(): readonly ToolCall[] {
    const batch = this.#batch;
    return batch ? batch.calls.filter((c) => !batch.results.has(c.callId)) : [];
  }

  /** What a suspension holds: `items`, then the results the open batch has so far, in call order. */
  suspendedItems(): Item[] {
    const out: Item[] = [...this.items];
    const batch = this.#batch;
    if (batch)
      for (const call of batch.calls) {
        const result = batch.results.get(call.callId);
        if (result) out.push(result);
      }
    return out;
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
    if (batch)
      for (const call of batch.calls) out.push(batch.results.get(call.callId) ?? interruptedResult(call.callId));
    else if (this.streamingText !== '')
      out.push({ type: 'assistant', id: interruptedId(), text: this.streamingText, toolCalls: [], interrupted: true });
    return out;
  }
}
