import type { SerializedError } from '../errors.js';
import { normalizeError } from './helpers.js';

/**
 * What `toMatchLoopctlError` compares with: some fields of a {@link SerializedError}
 * (`name`, `message`, `field`, `status`, `retryable`, …). Values may be asymmetric matchers
 * (`expect.stringContaining('…')`); a field given as `undefined` must be absent.
 */
export interface ExpectedLoopctlError {
  readonly name?: unknown;
  readonly message?: unknown;
  readonly [field: string]: unknown;
}

/** The part of a Vitest or Jest matcher's `this` that {@link loopctlMatchers} uses. */
export interface LoopctlMatcherContext {
  readonly isNot: boolean;
  equals(a: unknown, b: unknown): boolean;
}

/**
 * A matcher's result as Vitest and Jest read it; `actual` is the normalised error cut down to
 * the fields `expected` names, so the runner's diff shows only the compared fields.
 */
export interface LoopctlMatcherResult {
  readonly pass: boolean;
  readonly message: () => string;
  readonly actual: Record<string, unknown>;
  readonly expected: ExpectedLoopctlError;
}

/**
 * The matchers' types, for your runner's `Matchers` interface. With Vitest, in a `.d.ts` or setup file:
 * `declare module 'vitest' { interface Matchers<T = any> extends LoopctlMatchers<T> {} }`
 * (Jest: `declare module 'expect' { interface Matchers<R> extends LoopctlMatchers<R> {} }`).
 */
export interface LoopctlMatchers<R = unknown> {
  /** See {@link loopctlMatchers}. */
  toMatchLoopctlError(expected: ExpectedLoopctlError): R;
}

/**
 * Custom matchers for Vitest or Jest; loopctl does not depend on either: register them yourself with
 * `expect.extend(loopctlMatchers)` (e.g. in a setup file) and add {@link LoopctlMatchers} to the
 * runner's types.
 *
 * `expect(error).toMatchLoopctlError(expected)` passes when every field of `expected` equals
 * (runner's deep equality) the same field of `normalizeError(error)`: a partial match, like
 * `toMatchObject` one level deep; fields `expected` does not name are ignored. `error` is any thrown or
 * rejected value, so `await expect(promise).rejects.toMatchLoopctlError({ name: 'RunCancelledError' })`
 * works. A failure lists each mismatched field, expected against received.
 *
 * @throws TypeError when `expected` is not a plain object.
 */
export const loopctlMatchers = {
  toMatchLoopctlError(
    this: LoopctlMatcherContext,
    received: unknown,
    expected: ExpectedLoopctlError,
  ): LoopctlMatcherResult {
    if (expected === null || typeof expected !== 'object' || Array.isArray(expected)) {
      const got = show(expected);
      throw new TypeError(`toMatchLoopctlError: expected must be an object like { name, message }, got ${got}`);
    }
    const normalized: SerializedError = normalizeError(received);
    const keys = Object.keys(expected);
    const actual: Record<string, unknown> = {};
    for (const key of keys) if (key in normalized) actual[key] = normalized[key];
    const mismatched = keys.filter((key) => !this.equals(normalized[key], expected[key]));
    const pass = mismatched.length === 0;
    const message = (): string => {
      const head = `expected the error ${this.isNot ? 'not ' : ''}to match ${show(expected)}`;
      const fields = mismatched.map(
        (key) => `  ${key}: expected ${show(expected[key])}, received ${show(normalized[key])}`,
      );
      return [head, ...fields, `normalized error: ${show(normalized)}`].join('\n');
    };
    return { pass, message, actual, expected };
  },
};

/** One value as a line of text: JSON, asymmetric matchers by their own description. */
function show(value: unknown): string {
  if (value === undefined) return 'undefined';
  try {
    return JSON.stringify(value, (_key, v: unknown) => (isAsymmetric(v) ? describeMatcher(v) : v)) ?? String(value);
  } catch {
    return String(value); // circular or a BigInt
  }
}

interface AsymmetricLike {
  asymmetricMatch(other: unknown): boolean;
  toAsymmetricMatcher?(): string;
}

function isAsymmetric(v: unknown): v is AsymmetricLike {
  return typeof v === 'object' && v !== null && typeof (v as AsymmetricLike).asymmetricMatch === 'function';
}

function describeMatcher(m: AsymmetricLike): string {
  return typeof m.toAsymmetricMatcher === 'function' ? m.toAsymmetricMatcher() : String(m);
}
