import { ConfigurationError } from '../errors.js';

/**
 * The checks the model adapters make on their options at construction, one rule per kind of option, each throwing a
 * `ConfigurationError` naming the field (so a bad option fails where it is written, not as a confusing error of the
 * SDK on the first call). Pure; isomorphic.
 */

const show = (value: unknown): string => (typeof value === 'string' ? JSON.stringify(value) : String(value));

/** A plain JSON-like object (not null, not an array). */
export const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** `value` is undefined or a non-empty string. @throws ConfigurationError naming `field`. */
export function checkOptionalText(field: string, value: unknown): void {
  if (value !== undefined && (typeof value !== 'string' || value === '')) {
    throw new ConfigurationError(field, `must be a non-empty string (got ${show(value)})`);
  }
}

/** `value` is undefined or a boolean. @throws ConfigurationError naming `field`. */
export function checkOptionalBoolean(field: string, value: unknown): void {
  if (value !== undefined && typeof value !== 'boolean') {
    throw new ConfigurationError(field, `must be true or false (got ${show(value)})`);
  }
}

/** `value` is undefined or a plain object (`{ … }`, not null, not an array). @throws ConfigurationError. */
export function checkOptionalObject(field: string, value: unknown): void {
  if (value !== undefined && !isPlainObject(value)) {
    throw new ConfigurationError(
      field,
      `must be an object of fields (got ${Array.isArray(value) ? 'an array' : show(value)})`,
    );
  }
}

/** `value` is undefined or an absolute `http:` / `https:` URL. @throws ConfigurationError naming `field`. */
export function checkOptionalBaseURL(field: string, value: unknown): void {
  if (value === undefined) return;
  let protocol: string | undefined;
  try {
    protocol = typeof value === 'string' ? new URL(value).protocol : undefined;
  } catch {
    protocol = undefined;
  }
  if (protocol !== 'http:' && protocol !== 'https:') {
    throw new ConfigurationError(field, `must be an http(s) URL, e.g. http://127.0.0.1:8080 (got ${show(value)})`);
  }
}

/**
 * `value` is undefined or an SDK client with a function at each of `methods` (dotted paths, e.g.
 * `'messages.create'`). @throws ConfigurationError naming `field` and the missing method.
 */
export function checkOptionalClient(field: string, value: unknown, methods: readonly string[]): void {
  if (value === undefined) return;
  for (const method of methods) {
    let at: unknown = value;
    for (const key of method.split('.')) at = typeof at === 'object' && at !== null ? (at as never)[key] : undefined;
    if (typeof at !== 'function') {
      throw new ConfigurationError(field, `must be the provider SDK's client (it has no ${method}() method)`);
    }
  }
}
