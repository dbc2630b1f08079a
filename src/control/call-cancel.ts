import { ConfigurationError } from '../errors.js';

/**
 * `cancelToolCall`'s `callId` (docs/run-control.md, "Per-call cancel"): a non-empty string, or a
 * `ConfigurationError` naming `callId`. An id that names no running call is not an error: the method
 * answers `false`.
 */
export function checkCallId(callId: unknown): asserts callId is string {
  if (typeof callId !== 'string' || callId === '') {
    const shown = typeof callId === 'string' ? '""' : typeof callId;
    throw new ConfigurationError('callId', `must be a non-empty string (got ${shown})`);
  }
}
