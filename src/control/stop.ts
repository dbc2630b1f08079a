import { readProp } from '../describe.js';
import { parseRunCommand, type RunCommandOf } from './command.js';
import { ConfigurationError } from '../errors.js';
import type { StopAt, StopTimeoutReason } from '../events.js';

export type { StopAt, StopTimeoutReason };

/**
 * What `RunControl.stop()` takes. `at` defaults to `'turn_end'`. `graceMs` (an integer number of ms from 0
 * to 2³¹−1, `MAX_DURATION_MS`) has no default: without it the run waits for the boundary however long it
 * takes; with it, a run that has not reached the boundary `graceMs` ms after the stop is cancelled with reason
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
 * Validates what `stop()` was given (read totally: a foreign value never throws past here) with the stop
 * command's rule. Throws `ConfigurationError` naming `at` (not `'turn_end'` or `'tool_call_end'`) or
 * `graceMs` (not an integer number of ms from 0 to 2³¹−1), or `options` when it is not an object.
 */
export function checkStopOptions(options: unknown): StopRequest {
  if (options === undefined) return { at: 'turn_end' };
  if (options === null || typeof options !== 'object') throw new ConfigurationError('options', 'must be an object');
  const at = readProp(options, 'at', UNREADABLE);
  const graceMs = readProp(options, 'graceMs', UNREADABLE);
  for (const [field, value] of [
    ['at', at],
    ['graceMs', graceMs],
  ] as const) {
    if (value === UNREADABLE) throw new ConfigurationError(field, 'cannot be read (a getter or Proxy trap threw)');
  }
  // The stop command's own rule (parseRunCommand, the one validator of run commands).
  const command = parseRunCommand({ op: 'stop', at, graceMs }) as RunCommandOf<'stop'>;
  return command.graceMs === undefined
    ? { at: command.at ?? 'turn_end' }
    : { at: command.at ?? 'turn_end', graceMs: command.graceMs };
}
