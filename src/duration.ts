import { z } from 'zod';
import { ConfigurationError } from './errors.js';

/**
 * The longest duration loopctl accepts anywhere, in ms: 2³¹−1 (about 24.8 days), the most a JavaScript
 * timer (`setTimeout`, and RxJS's `timer`, which uses it) can wait. A longer delay would fire at once (the
 * timer overflows), so it is refused instead: every duration option and run command field (deadlines,
 * retry delays, a stop's `graceMs`, `localRuns`' retention, a worker's times) is a `ConfigurationError`
 * naming the field above it. Turn a deadline off with `false` rather than giving it a huge value.
 */
export const MAX_DURATION_MS = 2_147_483_647;

/** How {@link checkDurationMs} reads a duration: its least value (0 or 1), and whether it must be an integer. */
export interface DurationRule {
  readonly min?: 0 | 1;
  readonly integer?: boolean;
  /** Appended to the rule in the message (", or false for none"). */
  readonly orElse?: string;
}

/**
 * A duration in ms: a finite number from `min` (default 0) to {@link MAX_DURATION_MS}, an integer when
 * `integer` is set. Returns it.
 * @throws {ConfigurationError} naming `field` for anything else (`Infinity`, `NaN`, negative, too large).
 */
export function checkDurationMs(value: unknown, field: string, rule: DurationRule = {}): number {
  const { min = 0, integer = false, orElse = '' } = rule;
  const ok =
    typeof value === 'number' &&
    Number.isFinite(value) &&
    value >= min &&
    value <= MAX_DURATION_MS &&
    (!integer || Number.isInteger(value));
  if (!ok) throw new ConfigurationError(field, `${durationRule(min, integer)}${orElse} (got ${shown(value)})`);
  return value;
}

/** The rule's words: "must be an integer number of ms from 0 to 2147483647". */
export function durationRule(min: 0 | 1, integer: boolean): string {
  return `must be ${integer ? 'an integer' : 'a'} number of ms from ${min} to ${MAX_DURATION_MS}`;
}

/**
 * The same rule as a zod schema (integer ms, from 0), for the run commands' wire fields (`graceMs`): a
 * failure's message is the rule's words.
 */
export const DurationMsSchema = z
  .number({ error: durationRule(0, true) })
  .refine((v) => Number.isInteger(v) && v >= 0 && v <= MAX_DURATION_MS, { error: durationRule(0, true) });

function shown(value: unknown): string {
  if (typeof value === 'number') return String(value);
  if (typeof value === 'string') return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);
  return value === null ? 'null' : typeof value;
}

/**
 * An SDK's own timer for a request the engine bounds at `deadlineMs`: `deadlineMs + marginMs`, so the engine's
 * deadline fires first, capped at {@link MAX_DURATION_MS} (a deadline near the bound plus the margin would
 * otherwise overflow Node's timer, which then fires after 1 ms).
 */
export function sdkTimeoutMs(deadlineMs: number, marginMs: number): number {
  return Math.min(deadlineMs + marginMs, MAX_DURATION_MS);
}
