import { lastValueFrom } from 'rxjs';
import { isObservableTotal, isThenable } from '../describe.js';
import type { Item } from '../items.js';
import type { MaybeAsync } from '../session/session.js';
import { ConfigurationError } from '../errors.js';
import { HistoryConflictError } from './errors.js';

/** A session's `load()` result as a Promise (a value, a Promise, or an Observable's last value). */
export async function settle<T>(value: MaybeAsync<T>): Promise<T> {
  if (isObservableTotal(value)) return lastValueFrom(value);
  if (isThenable(value)) return await value;
  return value as T;
}

/**
 * The Items of `input` the thread does not hold yet ("only unknown ids become input"): an Item whose id is
 * in `history` is left out when it is the same Item (same role and, for user and assistant Items, the
 * same text) and a {@link HistoryConflictError} naming `input[i]` otherwise; an id in `pending` (given to
 * the live run, or queued in the thread's mailbox) is left out. `tool_result` Items carry no id: always new.
 * An id given twice in `input` is one Item: a repeat of the same Item is left out, a different one is a
 * {@link ConfigurationError} naming `input[i]` (else both would be stored under one id).
 */
export function newInput(input: readonly Item[], history: readonly Item[], pending: (id: string) => boolean): Item[] {
  const stored = new Map<string, Exclude<Item, { type: 'tool_result' }>>();
  for (const item of history) if (item.type !== 'tool_result') stored.set(item.id, item);
  const out: Item[] = [];
  const given = new Map<string, Exclude<Item, { type: 'tool_result' }>>();
  input.forEach((item, i) => {
    if (item.type === 'tool_result') return void out.push(item);
    const earlier = given.get(item.id);
    if (earlier !== undefined) {
      if (earlier.type === item.type && earlier.text === item.text) return; // the same Item again
      throw new ConfigurationError(
        `input[${i}]`,
        `id ${JSON.stringify(item.id)} names a different item earlier in this input`,
      );
    }
    given.set(item.id, item);
    const known = stored.get(item.id);
    if (known === undefined) {
      if (!pending(item.id)) out.push(item);
      return;
    }
    if (known.type !== item.type || known.text !== item.text) throw new HistoryConflictError(`input[${i}]`, item.id);
  });
  return out;
}
