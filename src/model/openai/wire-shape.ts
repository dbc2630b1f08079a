import { ModelOutputError } from '../../errors.js';

/**
 * Shape checks for values read from the wire (docs/recovery.md, "Wire
 * faults"): a field of the wrong type is a `ModelOutputError` naming the field,
 * never a TypeError further on. `malformed_chunk` is for a streamed chunk or
 * event, `malformed_response` for a whole response body.
 */
export type WireCode = 'malformed_chunk' | 'malformed_response';

/** A plain object (not null, not an array). */
export type Obj = Record<string, unknown>;

/** True for a plain object (not null, not an array). */
export function isObj(value: unknown): value is Obj {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Throws the typed error for `field`: "malformed stream chunk: <field> must
 * be <expected>, got <kind>" (or "malformed response: …"), with `code` and
 * `field` set.
 */
export function malformed(code: WireCode, field: string, expected: string, value: unknown): never {
  const what = code === 'malformed_chunk' ? 'malformed stream chunk' : 'malformed response';
  throw new ModelOutputError(`${what}: ${field} must be ${expected}, got ${kindOf(value)}`, { code, field });
}

/** `value` as an object; anything else throws {@link malformed}. */
export function obj(value: unknown, code: WireCode, field: string): Obj {
  return isObj(value) ? value : malformed(code, field, 'an object', value);
}

/** `value` as an array; null or absent is an empty list; anything else throws {@link malformed}. */
export function list(value: unknown, code: WireCode, field: string): readonly unknown[] {
  if (value === null || value === undefined) return [];
  return Array.isArray(value) ? value : malformed(code, field, 'an array', value);
}

/** `value` as a string; null or absent is undefined; anything else throws {@link malformed}. */
export function text(value: unknown, code: WireCode, field: string): string | undefined {
  if (value === null || value === undefined) return undefined;
  return typeof value === 'string' ? value : malformed(code, field, 'a string', value);
}

/** `value` as a string that must be there; anything else throws {@link malformed}. */
export function requiredText(value: unknown, code: WireCode, field: string): string {
  return typeof value === 'string' ? value : malformed(code, field, 'a string', value);
}

/** The kind of a wire value, for messages: `null`, `nothing`, `an array`, `an object`, `a string`, … */
export function kindOf(value: unknown): string {
  if (value === null) return 'null';
  if (value === undefined) return 'nothing';
  if (Array.isArray(value)) return 'an array';
  const type = typeof value;
  return type === 'object' ? 'an object' : `a ${type}`;
}
