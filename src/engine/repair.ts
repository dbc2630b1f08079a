import type { AssistantItem, Item, ToolCall, ToolResultItem } from '../items.js';
import { interruptedResult } from './scratchpad.js';

/**
 * "The history is valid on the wire" (docs/recovery.md): every tool call the
 * engine stores or sends has arguments that are a JSON object and an id no
 * other call in the history has. Model output that breaks this is repaired
 * once, where it enters the history; the model's unusable text survives only
 * inside the tool result paired with the call. Pure functions, except two
 * per-run memos: the fault registry that carries a refused call from the
 * response to dispatch, and the index of call ids already taken.
 */

/** Raw arguments longer than this many characters are shown cut (head and tail kept) in a result. */
export const RAW_ARGUMENTS_LIMIT = 2_000;
const HEAD = 1_500;
const TAIL = 500;

/** Why a call the model made is refused before it runs; becomes `tool_call_failed.error`. */
export interface CallFault {
  readonly name: 'InvalidArgumentsError' | 'DuplicateCallIdError';
  readonly message: string;
}

type ArgumentsCheck =
  { readonly ok: true; readonly text: string } | { readonly ok: false; readonly reason: string; readonly raw: string };

/**
 * Checks a call's arguments text. A JSON object is kept as it is; empty text
 * (or only white space) means `{}` ("empty arguments count as {}"); anything
 * else gives the reason it is unusable and the raw text.
 */
export function checkArguments(toolName: string, text: unknown): ArgumentsCheck {
  if (typeof text !== 'string')
    return { ok: false, reason: `the arguments of ${toolName} are not text`, raw: rawText(text) };
  if (text.trim() === '') return { ok: true, text: '{}' };
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    return {
      ok: false,
      reason: `the arguments of ${toolName} are not valid JSON (${(err as Error).message})`,
      raw: text,
    };
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    return {
      ok: false,
      reason: `the arguments of ${toolName} must be a JSON object, not ${kindOf(parsed)}`,
      raw: text,
    };
  }
  return { ok: true, text };
}

/** "Arguments received (N characters): …", cut to {@link RAW_ARGUMENTS_LIMIT} with its head and tail kept. */
export function receivedText(raw: string): string {
  const shown =
    raw.length <= RAW_ARGUMENTS_LIMIT
      ? raw
      : `${raw.slice(0, HEAD)} … [${raw.length - HEAD - TAIL} characters left out] … ${raw.slice(-TAIL)}`;
  return `Arguments received (${raw.length} characters): ${shown}`;
}

/** Every tool call id in `lists`, in one set. */
export function callIdsOf(...lists: readonly (readonly Item[])[]): Set<string> {
  const ids = new Set<string>();
  for (const items of lists)
    for (const item of items) if (item.type === 'assistant') for (const c of item.toolCalls) ids.add(c.callId);
  return ids;
}

const indexes = new WeakMap<object, { readonly ids: Set<string>; seen: number }>();

/**
 * The call ids of `history` and `items`, kept for `owner` (a run) and brought
 * up to date on each call by reading only the Items added since: `history`
 * is read once and `items` may only grow. Costs O(new Items) per call, so a
 * long run does not rescan its history every turn.
 */
export function takenIds(owner: object, history: readonly Item[], items: readonly Item[]): ReadonlySet<string> {
  let index = indexes.get(owner);
  if (!index) indexes.set(owner, (index = { ids: callIdsOf(history), seen: 0 }));
  for (; index.seen < items.length; index.seen++) {
    const item = items[index.seen]!;
    if (item.type === 'assistant') for (const call of item.toolCalls) index.ids.add(call.callId);
  }
  return index.ids;
}

/** The calls of one response as they are stored, and the refused ones' faults (keyed by the stored call). */
export interface RepairedCalls {
  readonly calls: readonly ToolCall[];
  readonly faults: ReadonlyMap<ToolCall, CallFault>;
  /** False when every call was kept as it came (then `calls` is the input array). */
  readonly changed: boolean;
}

/**
 * Repairs the tool calls of one model response before they become an
 * assistant Item:
 * - arguments that are not a JSON object are stored as `{}`; the call is
 *   refused (`InvalidArgumentsError`) with a message that says why (and that
 *   the response was cut off, when `cutOff`) and carries the raw text;
 * - a call id an earlier call of the same response has is replaced by a fresh
 *   one and the call is refused (`DuplicateCallIdError`): which result would
 *   belong to which call is ambiguous, so it never runs;
 * - an empty id, or one a call earlier in the history (`taken`) has, is
 *   replaced by a fresh one silently: the call's place is unambiguous, so it runs.
 * Empty arguments are stored as `{}` and run. Fresh ids come from `newId`
 * (the run's id generator), skipping any id already in use.
 */
export function repairResponseCalls(
  calls: readonly ToolCall[],
  context: { readonly cutOff: boolean; readonly taken: ReadonlySet<string>; readonly newId: () => string },
): RepairedCalls {
  const mine = new Set(calls.map((call) => call.callId)); // `taken` is not copied: it may be a long history's
  const used: IdSet = { has: (id) => mine.has(id) || context.taken.has(id), add: (id) => mine.add(id) };
  const inResponse = new Set<string>();
  const faults = new Map<ToolCall, CallFault>();
  let changed = false;
  const out = calls.map((call): ToolCall => {
    const args = checkArguments(call.name, call.arguments);
    const duplicate = inResponse.has(call.callId);
    inResponse.add(call.callId);
    const rename = duplicate || call.callId === '' || context.taken.has(call.callId);
    const callId = rename ? freshId(context.newId, used) : call.callId;
    const text = args.ok ? args.text : '{}';
    if (callId === call.callId && text === call.arguments) return call;
    changed = true;
    const stored: ToolCall = { callId, name: call.name, arguments: text };
    if (duplicate) {
      const dup =
        `duplicate call id "${call.callId}": an earlier call in this response already has that id, ` +
        'so this call was not run; call the tool again if you still need it';
      faults.set(stored, {
        name: 'DuplicateCallIdError',
        message: args.ok ? dup : `${dup}; also, ${args.reason}. ${receivedText(args.raw)}`,
      });
    } else if (!args.ok) {
      const why = context.cutOff ? ': the response was cut off at its output token limit, so' : ', so';
      faults.set(stored, {
        name: 'InvalidArgumentsError',
        message: `${args.reason}${why} the tool was not run. ${receivedText(args.raw)}`,
      });
    }
    return stored;
  });
  return { calls: changed ? out : calls, faults, changed };
}

const registry = new WeakMap<ToolCall, CallFault>();

/** Marks a stored call as refused, for dispatch to pair with an error result instead of running it. */
export function markRefused(faults: ReadonlyMap<ToolCall, CallFault>): void {
  for (const [call, fault] of faults) registry.set(call, fault);
}

/** The fault a stored call was refused for at its response, if any. */
export function refusedFor(call: ToolCall): CallFault | undefined {
  return registry.get(call);
}

/**
 * Repairs a history loaded from a session (or given as input) before it is
 * sent; the stored Items are not changed, so nothing of them is lost:
 * - arguments that are not a JSON object are sent as `{}`, and the paired
 *   result gets a note with the reason and the raw text;
 * - an empty id, or one an earlier call has (in `items` or in `taken`), is
 *   replaced by a fresh one, together with its paired result;
 * - each call's result follows its assistant Item, in call order (the first
 *   result with the call's id after it); a call with none gets an
 *   interrupted result; a result that pairs no call is left out.
 * @returns the items unchanged (same objects) where nothing needed a repair.
 */
export function repairHistory(
  items: readonly Item[],
  newId: () => string,
  taken: ReadonlySet<string> = new Set(),
): Item[] {
  const positions = new Map<string, number[]>();
  items.forEach((item, i) => {
    if (item.type !== 'tool_result') return;
    const list = positions.get(item.callId);
    if (list) list.push(i);
    else positions.set(item.callId, [i]);
  });
  const next = new Map<string, number>(); // per id: index into its positions of the next unclaimed result
  const used = new Set([...taken, ...callIdsOf(items)]);
  const assigned = new Set(taken);
  const out: Item[] = [];
  items.forEach((item, i) => {
    if (item.type === 'tool_result') return; // placed after its call below; one that pairs no call is left out
    if (item.type !== 'assistant' || item.toolCalls.length === 0) return void out.push(item);
    const results: ToolResultItem[] = [];
    const calls = item.toolCalls.map((call): ToolCall => {
      const args = checkArguments(call.name, call.arguments);
      const callId = call.callId === '' || assigned.has(call.callId) ? freshId(newId, used) : call.callId;
      assigned.add(callId);
      const text = args.ok ? args.text : '{}';
      const result = claim(items, positions, next, call.callId, i) ?? interruptedResult(callId);
      const note = args.ok ? '' : `\n\nNote: ${args.reason}, so they are sent as {}. ${receivedText(args.raw)}`;
      results.push(
        result.callId === callId && note === '' ? result : { ...result, callId, output: `${result.output}${note}` },
      );
      return callId === call.callId && text === call.arguments ? call : { callId, name: call.name, arguments: text };
    });
    const same = calls.every((c, k) => c === item.toolCalls[k]);
    out.push(same ? item : ({ ...item, toolCalls: calls } satisfies AssistantItem), ...results);
  });
  return out;
}

/** The first result with `callId` after position `after` that no call has claimed yet. */
function claim(
  items: readonly Item[],
  positions: ReadonlyMap<string, readonly number[]>,
  next: Map<string, number>,
  callId: string,
  after: number,
): ToolResultItem | undefined {
  const list = positions.get(callId);
  if (!list) return undefined;
  let k = next.get(callId) ?? 0;
  while (k < list.length && list[k]! < after) k++; // results before the call pair nothing
  if (k >= list.length) return undefined;
  next.set(callId, k + 1);
  return items[list[k]!] as ToolResultItem;
}

type IdSet = Pick<Set<string>, 'has' | 'add'>;

/** A fresh id from `newId` that is not in `used` (then added to it). */
function freshId(newId: () => string, used: IdSet): string {
  let id = newId();
  for (let n = 2; used.has(id) || id === ''; n++) id = n <= 10 ? newId() : `${id}_${n}`;
  used.add(id);
  return id;
}

function kindOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'string' ? 'a string' : typeof value === 'number' ? 'a number' : 'a boolean';
}

function rawText(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return Object.prototype.toString.call(value);
  }
}
