import type { Item, SummaryItem, UserItem } from '../../items.js';

/**
 * How a summary is sent (docs/long-runs.md, "Compaction"): the first words of the `user` message that stands for
 * the Items a summary covers. Every adapter encodes a user message, so a summary is valid on every wire.
 */
export const SUMMARY_PREFIX = 'Summary of the earlier conversation:\n\n';

/** The `user` Item a summary is sent as: its id, {@link SUMMARY_PREFIX} and its text. */
export function summaryMessage(summary: SummaryItem): UserItem {
  return { type: 'user', id: summary.id, text: `${SUMMARY_PREFIX}${summary.text}` };
}

/** The id a summary's `covers` names an Item by; a tool result has none (it is covered with its call). */
export function coverId(item: Item): string | undefined {
  return item.type === 'tool_result' ? undefined : item.id;
}

/**
 * The history as the engine sends it (docs/long-runs.md, "Compaction"): each summary, in the order it was
 * appended, replaces the prefix of the view so far whose user, assistant and summary Items are exactly those its
 * `covers` names, in order (with the tool results that follow the last of them); a summary whose `covers` does not
 * name such a prefix is not applied (the Items are sent as they are). The view keeps the summary Items that
 * apply, each where the Items it covers were; {@link sendable} turns them into messages. Pure; returns `items`
 * itself when it holds no summary.
 */
export function compactedView(items: readonly Item[]): readonly Item[] {
  if (!items.some((i) => i.type === 'summary')) return items;
  let view: Item[] = [];
  for (const item of items) {
    if (item.type !== 'summary') {
      view.push(item);
      continue;
    }
    const end = coveredPrefix(view, item.covers);
    if (end !== undefined) view = [item, ...view.slice(end)];
  }
  return view;
}

/** The view's summary Items as their `user` messages: what a request carries, with no `summary` Item left. */
export function sendable(view: readonly Item[]): readonly Item[] {
  if (!view.some((i) => i.type === 'summary')) return view;
  return view.map((i) => (i.type === 'summary' ? summaryMessage(i) : i));
}

/** The Items of a request built from `items`: the summaries applied, each sent as a `user` message. */
export function applySummaries(items: readonly Item[]): readonly Item[] {
  return sendable(compactedView(items));
}

/**
 * The length of the prefix of `view` that `covers` names (its Items with an id, exactly those, in order, plus the
 * tool results right after the last), or undefined when `covers` names no prefix of `view`.
 */
function coveredPrefix(view: readonly Item[], covers: readonly string[]): number | undefined {
  if (covers.length === 0) return undefined;
  let matched = 0;
  let i = 0;
  for (; i < view.length && matched < covers.length; i++) {
    const id = coverId(view[i]!);
    if (id === undefined) continue;
    if (id !== covers[matched]) return undefined;
    matched++;
  }
  if (matched < covers.length) return undefined;
  while (i < view.length && view[i]!.type === 'tool_result') i++;
  return i;
}
