import { ConfigurationError } from '../errors.js';

/** A non-empty name without `:` (a queue, a prefix); `field` names it in the error. */
export function checkName(value: unknown, field: string): string {
  if (typeof value !== 'string' || value === '' || value.includes(':')) {
    throw new ConfigurationError(field, 'must be a non-empty string without ":"');
  }
  return value;
}

/** An integer ≥ `min` (a time in ms, a count); `field` names it in the error. */
export function checkMs(value: unknown, field: string, min: number): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min) {
    throw new ConfigurationError(field, `must be an integer ≥ ${min}`);
  }
  return value;
}
