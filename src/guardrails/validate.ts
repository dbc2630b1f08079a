import { checkDurationMs } from '../duration.js';
import { ConfigurationError } from '../errors.js';
import { checkObject, checkPositiveInt } from '../engine/validate.js';
import type { Guardrails } from './types.js';

const MODES = { input: ['parallel', 'before'], output: ['after', 'hold', 'parallel'] } as const;

/**
 * Validates the agent option `guardrails` (docs/guardrails.md). Throws `ConfigurationError` naming the field
 * (e.g. `agent.guardrails.input[0].check`) for anything invalid, and for two guardrails of one kind with one name.
 */
export function checkGuardrails(guardrails: Guardrails<any>, field: string): void {
  checkObject(guardrails, field);
  if (guardrails.chunk !== undefined && guardrails.chunk !== 'sentence')
    checkPositiveInt(guardrails.chunk, `${field}.chunk`);
  for (const kind of ['input', 'output', 'tool'] as const) {
    const list = guardrails[kind];
    if (list === undefined) continue;
    if (!Array.isArray(list)) throw new ConfigurationError(`${field}.${kind}`, 'must be an array of guardrails');
    const names = new Set<string>();
    list.forEach((g: unknown, i) => {
      const at = `${field}.${kind}[${i}]`;
      checkObject(g, at);
      const guard = g as Record<string, unknown>;
      if (typeof guard.name !== 'string' || guard.name.length === 0)
        throw new ConfigurationError(`${at}.name`, 'must be a non-empty string');
      if (names.has(guard.name)) throw new ConfigurationError(`${at}.name`, `duplicate guardrail name "${guard.name}"`);
      names.add(guard.name);
      if (typeof guard.check !== 'function')
        throw new ConfigurationError(`${at}.check`, 'must be a function (input, ctx) => verdict');
      if (kind === 'tool') checkToolGuardrail(guard, at);
      else if (guard.mode !== undefined && !(MODES[kind] as readonly unknown[]).includes(guard.mode)) {
        const modes = MODES[kind].map((m) => `'${m}'`).join(', ');
        throw new ConfigurationError(`${at}.mode`, `must be one of ${modes}`);
      }
      if (guard.timeoutMs !== undefined && guard.timeoutMs !== false)
        checkDurationMs(guard.timeoutMs, `${at}.timeoutMs`);
      if (guard.onError !== undefined && guard.onError !== 'trip' && guard.onError !== 'pass')
        throw new ConfigurationError(`${at}.onError`, "must be 'trip' or 'pass'");
    });
  }
}

/** `when` (required), `tools` (names) and `onTrip` of a tool guardrail. */
function checkToolGuardrail(guard: Record<string, unknown>, at: string): void {
  if (guard.when !== 'before' && guard.when !== 'after')
    throw new ConfigurationError(`${at}.when`, "must be 'before' or 'after'");
  if (guard.onTrip !== undefined && guard.onTrip !== 'reject' && guard.onTrip !== 'end_run')
    throw new ConfigurationError(`${at}.onTrip`, "must be 'reject' or 'end_run'");
  const tools = guard.tools;
  if (tools !== undefined && (!Array.isArray(tools) || !tools.every((t) => typeof t === 'string')))
    throw new ConfigurationError(`${at}.tools`, 'must be an array of tool names');
}
