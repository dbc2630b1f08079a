import type { Item } from '../../items.js';

/**
 * Where a compaction cuts the view (docs/long-runs.md, "Compaction", "What is kept"): the index of the first Item
 * kept, so that the latest `keepRecentTurns` turns are kept word for word. A turn is an assistant Item with its
 * tool results and the user Items right before it, or the user Items at the end that no response answers yet; so
 * a cut is only ever before a user or assistant Item with every earlier tool call paired (never between a call
 * and its result) and never between a user Item and the response to it. Undefined when nothing older than those
 * turns is left to cover, or what is left is one summary.
 */
export function cutIndex(view: readonly Item[], keepRecentTurns: number): number | undefined {
  // Calls still open before each index, counted forward (a cut needs none).
  const open: number[] = new Array<number>(view.length);
  let pending = 0;
  for (let i = 0; i < view.length; i++) {
    open[i] = pending;
    const item = view[i]!;
    if (item.type === 'assistant') pending += item.toolCalls.length;
    else if (item.type === 'tool_result' && pending > 0) pending--;
  }
  // The user Items at the end (the input the next request answers) are the latest turn.
  let turns = view.at(-1)?.type === 'user' ? 1 : 0;
  for (let i = view.length - 1; i > 0; i--) {
    const item = view[i]!;
    if (item.type === 'assistant') turns++;
    if (turns < keepRecentTurns || open[i] !== 0) continue;
    if (item.type === 'tool_result') continue;
    if (view[i - 1]!.type === 'user') continue; // a user Item stays with what follows it
    return coversSomething(view, i) ? i : undefined;
  }
  return undefined;
}

/** True when the Items before `cut` hold more than one earlier summary. */
function coversSomething(view: readonly Item[], cut: number): boolean {
  return !(cut === 1 && view[0]!.type === 'summary');
}
