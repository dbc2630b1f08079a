import { readProp } from '../describe.js';
import { ConfigurationError } from '../errors.js';
import type { StopAt, StopTimeoutReason } from '../events.js';

export type { StopAt, StopTimeoutReason };

/**
 * What `RunControl.stop()` takes. `at` defaults to `'turn_end'`. `graceMs` (ms, a non-negative finite
 * number) has no default: without it the run waits for the boundary however long it takes; with it,
 * a run that has not reached the boundary `graceMs` ms after the stop is cancelled with reason
 * `{ type: 'stop_timeout', graceMs }` (a {@link StopTimeoutReason}) at the phase where it was.
 */
export interface RunStopOptions {
  readonly at?: StopAt;
  readonly graceMs?: number;
}

/** A validated stop request, as a run holds it (and as `stop_requested` carries it). */
export interface StopRequest {
  readonly at: StopAt;
  readonly graceMs?: number;
}

/** A frozen `{ type: 'stop_timeout', graceMs }`: the reason `run_cancelled` carries when a stop's grace expired. */
export function stopTimeoutReason(graceMs: number): StopTimeoutReason {
  return Object.freeze({ type: 'stop_timeout' as const, graceMs });
}

const UNREADABLE = Symbol('unreadable');

/**
 * Validates what `stop()` was given (read totally: a foreign value never throws past here). Throws
 * `ConfigurationError` naming `at` (not `'turn_end'` or `'tool_call_end'`) or `graceMs` (not a
 * non-negative finite number), or `options` when it is not an object.
 */
export function checkStopOptions(options: unknown): StopRequest {
  if (options === undefined) return { at: 'turn_end' };
  if (options === null || typeof options !== 'object') throw new ConfigurationError('options', 'must be an object');
  const at = readProp(options, 'at', UNREADABLE);
  const graceMs = readProp(options, 'graceMs', UNREADABLE);
  if (at !== undefined && at !== 'turn_end' && at !== 'tool_call_end') {
    const shown = at === UNREADABLE ? 'an unreadable value' : typeof at === 'string' ? JSON.stringify(at) : typeof at;
    throw new ConfigurationError('at', `must be 'turn_end' or 'tool_call_end' (got ${shown})`);
  }
  if (graceMs === undefined) return { at: (at as StopAt | undefined) ?? 'turn_end' };
  if (typeof graceMs !== 'number' || !Number.isFinite(graceMs) || graceMs < 0) {
    const shown =
      graceMs === UNREADABLE ? 'an unreadable value' : typeof graceMs === 'number' ? String(graceMs) : typeof graceMs;
    throw new ConfigurationError('graceMs', `must be a non-negative number of ms (got ${String(shown)})`);
  }
  return { at: (at as StopAt | undefined) ?? 'turn_end', graceMs };
}
