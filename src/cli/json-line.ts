/**
 * `--json` output: one value (a `RunEvent`) as one NDJSON line. Total: it
 * never throws, whatever the value holds (a cancel reason or a tool's
 * progress can be any foreign value): the value is first copied into plain
 * JSON data, reading each property defensively, then `JSON.stringify`ed.
 *
 * Copy rules: BigInt → its decimal string; a cycle → `"[Circular]"`; Map →
 * an array of `[key, value]` entries; Set → an array; Date → its ISO string;
 * an Error → `{ name, message, …own enumerable fields }`; a function →
 * `"[function <name>]"`; a symbol → `"[symbol <description>]"`; an object's
 * `toJSON()` is used when it works; a property whose read throws →
 * `"[unreadable]"`; deeper than 64 levels → `"[too deep]"`; anything that
 * cannot be read at all → `"[unprintable <typeof>]"`. `undefined` is left
 * out of objects and is `null` in arrays, as in JSON.
 */

const MAX_DEPTH = 64;

/** `value` as one line of JSON, ending in `\n`; never throws. */
export function toJsonLine(value: unknown): string {
  return `${JSON.stringify(toJsonData(value) ?? null)}\n`;
}

/** `value` copied into plain JSON data by the rules above; never throws. */
export function toJsonData(value: unknown): unknown {
  return copy(value, [], 0);
}

function copy(value: unknown, ancestors: object[], depth: number): unknown {
  try {
    return copyUnsafe(value, ancestors, depth);
  } catch {
    return `[unprintable ${typeof value}]`;
  }
}

function copyUnsafe(value: unknown, ancestors: object[], depth: number): unknown {
  if (value === UNREADABLE) return '[unreadable]';
  switch (typeof value) {
    case 'string':
    case 'boolean':
    case 'undefined':
      return value;
    case 'number':
      return Number.isFinite(value) ? value : String(value);
    case 'bigint':
      return value.toString();
    case 'symbol':
      return `[symbol ${value.description ?? ''}]`;
    case 'function':
      return `[function ${readName(value)}]`;
  }
  if (value === null) return null;
  const object = value as object;
  if (ancestors.includes(object)) return '[Circular]';
  if (depth >= MAX_DEPTH) return '[too deep]';
  const inner = [...ancestors, object];
  const next = (v: unknown) => copy(v, inner, depth + 1);
  if (object instanceof Date) return Number.isNaN(object.getTime()) ? 'Invalid Date' : object.toISOString();
  if (object instanceof Map) return [...object.entries()].map(([k, v]) => [next(k), next(v)]);
  if (object instanceof Set) return [...object.values()].map(next);
  if (Array.isArray(object)) return object.map((v) => next(v) ?? null);
  const out: Record<string, unknown> = {};
  if (object instanceof Error) {
    out['name'] = copy(read(object, 'name'), inner, depth + 1);
    out['message'] = copy(read(object, 'message'), inner, depth + 1);
  } else {
    const toJSON = read(object, 'toJSON');
    if (typeof toJSON === 'function') return next((toJSON as () => unknown).call(object));
  }
  for (const key of Object.keys(object)) {
    if (key in out) continue;
    const v = next(read(object, key));
    if (v !== undefined) out[key] = v;
  }
  return out;
}

const UNREADABLE = Symbol('unreadable');

function read(object: object, key: string): unknown {
  try {
    return (object as Record<string, unknown>)[key];
  } catch {
    return UNREADABLE;
  }
}

function readName(fn: unknown): string {
  const name = read(fn as object, 'name');
  return typeof name === 'string' ? name : '';
}

/** Any value as text for a person: an Error as `Name: message`, a string as is, the rest as JSON data (total). */
export function describeValue(value: unknown): string {
  const data = toJsonData(value);
  if (typeof data === 'string') return data;
  if (value instanceof Error && typeof data === 'object' && data !== null) {
    const { name, message } = data as { name?: unknown; message?: unknown };
    return `${String(name)}: ${String(message)}`;
  }
  return JSON.stringify(data) ?? String(data);
}
