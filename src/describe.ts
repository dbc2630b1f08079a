/**
 * "Foreign values are never trusted" (docs/cancellation.md): a cancel reason,
 * a thrown value, a tool result or a steering value comes from code loopctl
 * does not control. Its `toString` may throw, it may have no prototype, it may
 * be a Proxy that throws on every trap. Everything here is total: it never
 * throws, whatever it is given. Isomorphic: no `node:*` import.
 */

import { isObservable, type Observable } from 'rxjs';

/** Deeper nesting than this is cut with a marker (a deep structure must not exhaust the stack). */
const MAX_DEPTH = 100;

/**
 * Reads `obj[key]` without letting a throwing getter or Proxy trap escape.
 * @returns the value, `undefined` for `null`/`undefined` objects, or `fallback` when the read throws.
 */
export function readProp(obj: unknown, key: PropertyKey, fallback?: unknown): unknown {
  if (obj === null || obj === undefined) return undefined;
  try {
    return (obj as Record<PropertyKey, unknown>)[key];
  } catch {
    return fallback;
  }
}

/** `value instanceof ctor`, false when the check itself throws (a Proxy's `getPrototypeOf` trap). */
export function isInstance(value: unknown, ctor: abstract new (...args: never[]) => unknown): boolean {
  try {
    return value instanceof ctor;
  } catch {
    return false;
  }
}

/** rxjs's `isObservable`, false for a value whose properties cannot be read (a hostile Proxy is a plain value). */
export function isObservableTotal(value: unknown): value is Observable<unknown> {
  try {
    return isObservable(value);
  } catch {
    return false;
  }
}

/** True for an object or function with a callable `then` (read totally). */
export function isThenable(value: unknown): value is PromiseLike<unknown> {
  if (value === null || (typeof value !== 'object' && typeof value !== 'function')) return false;
  return typeof readProp(value, 'then') === 'function';
}

const UNREADABLE = Symbol('unreadable');
/** Stands for a property whose getter threw. */
const UNREADABLE_MARK = '[unreadable]';

/** `"[function name]"`, or `"[function]"` for an anonymous one; never its source. */
function functionMarker(fn: unknown): string {
  const name = readProp(fn, 'name');
  return typeof name === 'string' && name !== '' ? `[function ${name}]` : '[function]';
}

/** An Error's message: the string as it is, anything else described, `[unprintable error message]` if unreadable. */
function errorMessage(error: object): string {
  const message = readProp(error, 'message', UNREADABLE);
  if (message === UNREADABLE) return '[unprintable error message]';
  return typeof message === 'string' ? message : describeValue(message, 'error message');
}

/**
 * One line of text for any value: strings as they are, Errors by their message,
 * symbols as `Symbol(description)`, functions as `[function name]` (never their
 * source), anything else as JSON text ({@link toJsonText}). Never throws: a value
 * that cannot be read at all becomes `[unprintable <label>]` (`label` defaults to
 * its `typeof`, e.g. `[unprintable object]`).
 */
export function describeValue(value: unknown, label?: string): string {
  try {
    switch (typeof value) {
      case 'string':
        return value;
      case 'undefined':
        return 'undefined';
      case 'number':
      case 'boolean':
      case 'bigint':
      case 'symbol':
        return String(value); // String() of a symbol never calls user code
      case 'function':
        return functionMarker(value);
    }
    if (value === null) return 'null';
    if (isInstance(value, Error)) return errorMessage(value as object);
    const json = toJsonText(value);
    if (json.ok) return json.text;
  } catch {
    // fall through to the marker
  }
  return `[unprintable ${label ?? typeof value}]`;
}

/** What {@link toJsonText} gives: the text, or why there is none. */
export type JsonTextResult =
  { readonly ok: true; readonly text: string } | { readonly ok: false; readonly reason: string };

/**
 * JSON text for any value, more faithful than `JSON.stringify` and total: a cycle
 * is cut with the string `"[Circular]"`, a BigInt becomes its decimal string, a Map
 * an array of `[key, value]` entries, a Set an array, a Date its ISO string (any
 * `toJSON` is honoured), an Error `{ name, message, …own fields }`; nested functions
 * and symbols become the strings `"[function name]"` and `"Symbol(description)"`, a
 * property whose getter throws `"[unreadable]"`, a nested value that cannot be
 * read `"[unprintable object]"`, nesting deeper than 100 levels `"[nested too deep]"`.
 * Not ok (with the reason in words) for a top-level function, symbol or `undefined`,
 * or a value that cannot be read at all.
 */
export function toJsonText(value: unknown): JsonTextResult {
  switch (typeof value) {
    case 'function':
      return { ok: false, reason: `it is a function (${functionMarker(value)}), which has no JSON form` };
    case 'symbol':
      return { ok: false, reason: `it is a symbol (${String(value)}), which has no JSON form` };
    case 'undefined':
      return { ok: false, reason: 'it is undefined, which has no JSON form' };
  }
  try {
    return { ok: true, text: write(value, '', 0, []) ?? 'null' };
  } catch {
    // Not described: what a hostile value throws may be just as hostile.
    return { ok: false, reason: 'it cannot be read (it threw while being serialised)' };
  }
}

const str = (s: string): string => JSON.stringify(s);

/** A nested value: what cannot be read is marked instead of failing its container. */
function child(value: unknown, key: string, depth: number, ancestors: object[]): string | undefined {
  try {
    return write(value, key, depth, ancestors);
  } catch {
    return str(`[unprintable ${typeof value}]`);
  }
}

/** JSON text of `value`, or `undefined` where JSON omits it (an `undefined` property). May throw: see {@link child}. */
function write(value: unknown, key: string, depth: number, ancestors: object[]): string | undefined {
  switch (typeof value) {
    case 'string':
      return str(value);
    case 'number':
      return Number.isFinite(value) ? String(value) : 'null';
    case 'boolean':
      return String(value);
    case 'bigint':
      return str(String(value));
    case 'undefined':
      return undefined;
    case 'symbol':
      return str(String(value));
    case 'function':
      return str(functionMarker(value));
  }
  if (value === null) return 'null';
  const obj = value as object;
  if (ancestors.includes(obj)) return str('[Circular]');
  if (depth >= MAX_DEPTH) return str('[nested too deep]');
  const toJSON = readProp(obj, 'toJSON');
  if (typeof toJSON === 'function') {
    const replaced: unknown = toJSON.call(obj, key);
    if (replaced !== obj) return write(replaced, key, depth + 1, ancestors);
  }
  ancestors.push(obj);
  try {
    return writeObject(obj, depth, ancestors);
  } finally {
    ancestors.pop();
  }
}

function writeObject(obj: object, depth: number, ancestors: object[]): string {
  const next = depth + 1;
  const list = (values: Iterable<unknown>): string => {
    const parts: string[] = [];
    let i = 0;
    for (const v of values) parts.push(child(v, String(i++), next, ancestors) ?? 'null');
    return `[${parts.join(',')}]`;
  };
  if (Array.isArray(obj)) return list(Array.from({ length: obj.length }, (_, i) => readProp(obj, i, UNREADABLE_MARK)));
  if (isInstance(obj, Map)) return list(Array.from(Map.prototype.entries.call(obj), ([k, v]) => [k, v]));
  if (isInstance(obj, Set)) return list(Set.prototype.values.call(obj));
  // Boxed primitives, as JSON.stringify unwraps them (the intrinsic valueOf throws for a fake).
  if (isInstance(obj, String)) return str(String.prototype.valueOf.call(obj));
  if (isInstance(obj, Number)) return write(Number.prototype.valueOf.call(obj), '', next, ancestors) ?? 'null';
  if (isInstance(obj, Boolean)) return String(Boolean.prototype.valueOf.call(obj));
  const fields: [string, unknown][] = [];
  if (isInstance(obj, Error)) {
    fields.push(['name', readProp(obj, 'name', UNREADABLE_MARK)], ['message', errorMessage(obj)]);
  }
  for (const k of Object.keys(obj)) {
    if (fields.some(([f]) => f === k)) continue;
    fields.push([k, readProp(obj, k, UNREADABLE_MARK)]);
  }
  const parts: string[] = [];
  for (const [k, v] of fields) {
    const text = child(v, k, next, ancestors);
    if (text !== undefined) parts.push(`${str(k)}:${text}`);
  }
  return `{${parts.join(',')}}`;
}
