import { ConfigurationError } from '../errors.js';
import { checkDurationMs } from '../duration.js';

/** A non-empty name without `:` (a queue, a prefix); `field` names it in the error. */
export function checkName(value: unknown, field: string): string {
  if (typeof value !== 'string' || value === '' || value.includes(':')) {
    throw new ConfigurationError(field, 'must be a non-empty string without ":"');
  }
  return value;
}

/**
 * A time in ms: an integer from `min` to `MAX_DURATION_MS` (2³¹−1, the longest a timer waits); `field` names it
 * in the error.
 */
export function checkMs(value: unknown, field: string, min: 0 | 1): number {
  return checkDurationMs(value, field, { min, integer: true });
}

/** A count (`concurrency`): a safe integer ≥ 1; `field` names it in the error. */
export function checkCount(value: unknown, field: string): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) {
    throw new ConfigurationError(field, 'must be an integer ≥ 1');
  }
  return value;
}
