import { ConfigurationError } from '../errors.js';
import { checkFrontendTools } from '../tools/frontend-tool.js';
import type { StartRunRequest } from './types.js';

const IF_BUSY = new Set(['reject', 'enqueue', 'interrupt', 'rollback', 'steer']);

/** `start` request fields, each named in the error (shared with the other `Runs` implementations). */
export function checkStart(req: StartRunRequest): void {
  if (req === null || typeof req !== 'object') throw new ConfigurationError('req', 'must be an object');
  for (const field of ['agent', 'threadId', 'principal'] as const) {
    if (typeof req[field] !== 'string' || req[field] === '')
      throw new ConfigurationError(field, 'must be a non-empty string');
  }
  if (typeof req.input !== 'string' && !Array.isArray(req.input)) {
    throw new ConfigurationError('input', 'must be a string or an array of Items');
  }
  if (req.ifBusy !== undefined && !IF_BUSY.has(req.ifBusy)) {
    throw new ConfigurationError('ifBusy', `must be one of ${[...IF_BUSY].join(', ')}`);
  }
  if (req.frontendTools !== undefined) checkFrontendTools(req.frontendTools, 'frontendTools');
}
