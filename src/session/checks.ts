/**
 * Argument checks every session store shares, so each names the same field the same way
 * ("bad input: a typed error naming the field"). Each throws `ConfigurationError`.
 */
import { describeValue } from '../describe.js';
import { checkDurationMs } from '../duration.js';
import { ConfigurationError, ResumeError } from '../errors.js';
import { ItemSchema, type Item } from '../items.js';
import type { AppendOptions, JournalTurn, RunJournal } from './session.js';

/** The longest session or run id a store accepts (characters): ids are keys, not payloads. */
export const MAX_ID_LENGTH = 1024;

/** A NUL or a lone surrogate: what no database key can hold as it is (Postgres text refuses NUL). */
const UNSTORABLE = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/**
 * Throws unless `value` is a non-empty string of at most {@link MAX_ID_LENGTH} characters, well-formed
 * Unicode without NUL (an id is a key every store must keep exactly).
 */
export function checkId(value: unknown, field: string): asserts value is string {
  if (typeof value !== 'string' || value.length === 0 || value.length > MAX_ID_LENGTH || UNSTORABLE.test(value)) {
    const got = gotText(value);
    const rule = `a non-empty string of at most ${MAX_ID_LENGTH} characters, well-formed Unicode without NUL`;
    throw new ConfigurationError(field, `must be ${rule} (got ${got})`);
  }
}

/** Throws unless `options.ttlMs` is a positive finite number of ms. */
export function checkTtl(options: unknown): number {
  const ttlMs = (options as { ttlMs?: unknown } | null | undefined)?.ttlMs;
  if (typeof ttlMs !== 'number' || !Number.isFinite(ttlMs) || ttlMs <= 0) {
    throw new ConfigurationError('options.ttlMs', `must be a positive number of ms (got ${describeValue(ttlMs)})`);
  }
  return checkDurationMs(ttlMs, 'options.ttlMs');
}

/** Throws unless `items` is an array of Items; the field names the first bad one (`items[3].text`). */
export function checkItems(items: unknown): asserts items is readonly Item[] {
  if (!Array.isArray(items)) {
    throw new ConfigurationError('items', `must be an array of Items (got ${describeValue(items)})`);
  }
  for (let i = 0; i < items.length; i++) {
    const parsed = ItemSchema.safeParse(items[i]);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      const path = issue?.path.map((p) => (typeof p === 'number' ? `[${p}]` : `.${String(p)}`)).join('') ?? '';
      throw new ConfigurationError(`items[${i}]${path}`, issue?.message ?? 'not an Item');
    }
  }
}

/** The `runId` of append options, checked when present. */
export function appendRunId(options: AppendOptions | undefined): string | undefined {
  const runId = options?.runId;
  if (runId !== undefined) checkId(runId, 'options.runId');
  return runId;
}

/**
 * The run-id key under which a store keeps `options.suspensionId` (`suspension:<id>`), checked when
 * present (it needs `options.runId`); undefined without one.
 */
export function suspensionKey(options: AppendOptions | undefined): string | undefined {
  const id = options?.suspensionId;
  if (id === undefined) return undefined;
  checkId(id, 'options.suspensionId');
  if (options?.runId === undefined) {
    throw new ConfigurationError('options.runId', 'is required with options.suspensionId');
  }
  const key = `suspension:${id}`;
  checkId(key, 'options.suspensionId');
  return key;
}

/**
 * The run-id key under which a store keeps a resumed call's start (`Session.recordCallStart`):
 * `call:` and the JSON of `[suspensionId, callId]` (never ambiguous, whatever the ids hold). Throws
 * `ConfigurationError` naming `suspensionId` or `callId` for a bad id, or `callId` when the key would be
 * longer than {@link MAX_ID_LENGTH}.
 */
export function callStartKey(suspensionId: unknown, callId: unknown): string {
  checkId(suspensionId, 'suspensionId');
  checkId(callId, 'callId');
  const key = `call:${JSON.stringify([suspensionId, callId])}`;
  checkId(key, 'callId');
  return key;
}

/**
 * The start of the keys of the call starts recorded under `runId` (`callStartKey(runId, …)`): `call:["<runId>",`,
 * so a run's records are removed with its journal (its commit, its discard).
 */
export function callStartPrefix(runId: string): string {
  return `call:[${JSON.stringify(runId)},`;
}

/** The most of a refused string a message quotes. */
const QUOTED_CHARS = 60;

/**
 * What a refused argument was, for a `ConfigurationError`'s "(got …)": a string quoted and escaped (so `"1"` is
 * told from `1`, and a NUL or a lone surrogate is shown, not written), cut after {@link QUOTED_CHARS} characters;
 * anything else as {@link describeValue} gives it.
 */
function gotText(value: unknown): string {
  if (typeof value !== 'string') return describeValue(value);
  if (value.length <= QUOTED_CHARS) return `${JSON.stringify(value)}, a string`;
  return `${JSON.stringify(value.slice(0, QUOTED_CHARS)).slice(0, -1)}…", a string of ${value.length} characters`;
}

/**
 * The writer's claim of a journal write (`JournalOptions.claim`), checked: undefined when absent; throws
 * `ConfigurationError` naming `field` unless a whole number ≥ 1.
 */
export function checkClaim(claim: unknown, field = 'options.claim'): number | undefined {
  if (claim === undefined) return undefined;
  if (typeof claim !== 'number' || !Number.isSafeInteger(claim) || claim < 1) {
    throw new ConfigurationError(field, `must be a whole number ≥ 1 (got ${gotText(claim)})`);
  }
  return claim;
}

/** The checks of `Session.fenceJournal`'s arguments: `runId` a run id, `claim` a whole number ≥ 1; gives `claim`. */
export function checkFenceJournal(runId: unknown, claim: unknown): number {
  checkId(runId, 'runId');
  if (claim === undefined) throw new ConfigurationError('claim', 'must be a whole number ≥ 1 (got undefined)');
  return checkClaim(claim, 'claim')!;
}

/**
 * The run id a fence of `runId` marks beside it (`Session.fenceRun`): `fence:<runId>`, so a fenced id is told
 * from a committed one. Throws `ConfigurationError` naming `runId` for a bad id, or one whose mark would be too
 * long.
 */
export function fenceKey(runId: unknown): string {
  checkId(runId, 'runId');
  const key = `fence:${runId}`;
  checkId(key, 'runId');
  return key;
}

/** The error a store rejects a second commit of one suspension with ("already resumed"). */
export function alreadyResumed(options: AppendOptions | undefined): ResumeError {
  const id = String(options?.suspensionId);
  return new ResumeError('already_resumed', `suspension ${id} was resumed and committed before`);
}

/** Orders ids by code point, as SQLite and Postgres (`COLLATE "C"`) compare UTF-8 text. */
export function compareIds(a: string, b: string): number {
  const x = [...a];
  const y = [...b];
  for (let i = 0; i < Math.min(x.length, y.length); i++) {
    const d = x[i]!.codePointAt(0)! - y[i]!.codePointAt(0)!;
    if (d !== 0) return d;
  }
  return x.length - y.length;
}

/** Throws unless `turn` is a whole number ≥ 1 (a journalled turn's number); gives it back. */
export function checkTurn(turn: unknown): number {
  if (typeof turn !== 'number' || !Number.isSafeInteger(turn) || turn < 1) {
    throw new ConfigurationError('turn', `must be a whole number ≥ 1 (got ${gotText(turn)})`);
  }
  return turn;
}

/** The checks of `Session.journalTurn`'s arguments, in the order the contract names them. */
export function checkJournalTurn(runId: unknown, turn: unknown, items: unknown): void {
  checkId(runId, 'runId');
  checkTurn(turn);
  checkItems(items);
}

/** One stored journal entry as a store read it: its turn key and its Items, neither checked yet. */
export interface StoredJournalEntry {
  readonly turn: unknown;
  readonly items: unknown;
}

/**
 * A run's journal from its stored entries, for the stores (docs/sessions.md, "No tool runs twice"): an entry
 * under turn `-n` is turn `n`'s journalled response (`journalResponse`), the others completed turns. Gives
 * the completed turns in turn order and, as `pending`, the latest response of a turn after all of them (an
 * older response, one a completed turn superseded, is ignored). Every entry is checked, as a store's rows
 * are foreign: one whose turn is not a non-zero safe integer, or whose Items are not an array of Items,
 * throws what `corrupt(what)` makes of `what` ("turn 0 is not a turn number", "turn 2 is not an array of
 * Items (item 1: …)"); the store names the run and the session in it (a `SessionSchemaError`, `corrupt`).
 */
export function journalOf(
  sealed: boolean,
  entries: readonly StoredJournalEntry[],
  corrupt: (what: string) => Error = (what) => new TypeError(what),
): RunJournal {
  if (sealed) return { sealed, turns: [] };
  const checked = entries.map((e) => checkedEntry(e, corrupt));
  const turns = checked.filter((e) => e.turn > 0).sort((a, b) => a.turn - b.turn);
  const last = turns.length === 0 ? 0 : turns[turns.length - 1]!.turn;
  let pending: JournalTurn | undefined;
  for (const e of checked) {
    const turn = -e.turn;
    if (turn > last && (pending === undefined || turn > pending.turn)) pending = { turn, items: e.items };
  }
  return pending === undefined ? { sealed, turns } : { sealed, turns, pending };
}

/** `entry` as a JournalTurn, or the error `corrupt` makes of why it is not one. */
function checkedEntry(entry: StoredJournalEntry, corrupt: (what: string) => Error): JournalTurn {
  const { turn, items } = entry;
  if (typeof turn !== 'number' || !Number.isSafeInteger(turn) || turn === 0) {
    throw corrupt(`turn ${describeValue(turn)} is not a turn number (a non-zero integer)`);
  }
  if (!Array.isArray(items)) throw corrupt(`turn ${turn} is not an array of Items, got ${describeValue(items)}`);
  for (let i = 0; i < items.length; i++) {
    const why = itemIssue(items[i]);
    if (why !== undefined) throw corrupt(`turn ${turn} is not an array of Items (item ${i}: ${why})`);
  }
  return { turn, items: items as Item[] };
}

/**
 * Why a stored row, parsed, is not an Item (its first issue, with its path: `toolCalls: Invalid input: …`), or
 * undefined when it is one: a store reads its rows strictly, the history's as the journal's.
 */
export function itemIssue(value: unknown): string | undefined {
  const parsed = ItemSchema.safeParse(value);
  if (parsed.success) return undefined;
  const issue = parsed.error.issues[0];
  const path = issue?.path.join('.') ?? '';
  return `${path === '' ? '' : `${path}: `}${issue?.message ?? 'invalid'}`;
}

/** One stored history row as a store read it: its sequence number and its text, neither checked yet. */
export interface StoredHistoryRow {
  readonly seq: unknown;
  readonly item: string;
}

/**
 * A session's history from its stored rows (in `seq` order) and the item count the store keeps for it (null
 * when there is no session row), for the stores: the rows are read strictly, as foreign data. A store numbers a
 * session's rows 0, 1, 2, … with no gap and counts them in the session row, and no write of it (an append, a
 * rename, a delete) breaks that, so a row whose number is not its place ("item 3 of session "s" is missing"), a
 * count that disagrees with the rows ("session "s" counts 5 items but 4 are stored"), a row that is not JSON or
 * not an Item, throws what `corrupt(what, cause)` makes of it (the store's `SessionSchemaError`, `corrupt`):
 * a history with a row removed is refused, never loaded in part.
 */
export function historyOf(
  sessionId: string,
  count: number | null,
  rows: readonly StoredHistoryRow[],
  corrupt: (what: string, cause?: unknown) => Error,
): Item[] {
  const session = `session "${sessionId}"`;
  const items: Item[] = new Array(rows.length);
  for (let i = 0; i < rows.length; i++) {
    const { seq, item } = rows[i]!;
    if (seq !== i) {
      const next =
        typeof seq === 'number' ? `the next stored row is item ${seq}` : `a row numbered ${describeValue(seq)}`;
      throw corrupt(`item ${i} of ${session} is missing (${next}): a row was removed`);
    }
    let row: unknown;
    try {
      row = JSON.parse(item);
    } catch (err) {
      throw corrupt(`item ${i} of ${session} is not JSON`, err);
    }
    const why = itemIssue(row);
    if (why !== undefined) throw corrupt(`item ${i} of ${session} is not an Item (${why})`);
    items[i] = row as Item;
  }
  const counted = count ?? 0;
  if (counted !== rows.length) {
    const counts = count === null ? 'has no session row' : `counts ${counted} item${counted === 1 ? '' : 's'}`;
    throw corrupt(`${session} ${counts} but ${rows.length} ${rows.length === 1 ? 'is' : 'are'} stored`);
  }
  return items;
}
