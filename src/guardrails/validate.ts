import { checkDurationMs } from '../duration.js';
import { ConfigurationError } from '../errors.js';
import { checkObject, checkPositiveInt } from '../engine/validate.js';
import type { Guardrails } from './types.js';

const MODES = { input: ['parallel', 'before'], output: ['after', 'hold', 'parallel'] } as const;
const TOP_KEYS = ['input', 'output', 'tool', 'chunk'];
const BASE_KEYS = ['name', 'check', 'timeoutMs', 'onError'];
const KEYS = {
  input: [...BASE_KEYS, 'mode'],
  output: [...BASE_KEYS, 'mode', 'onTrip', 'refusal'],
  tool: [...BASE_KEYS, 'when', 'tools', 'onTrip'],
} as const;

/** A key `value` has that `known` does not name is a typo: a `ConfigurationError` naming it (`<field>.<key>`). */
function checkKnownKeys(value: object, known: readonly string[], field: string): void {
  for (const key of Object.keys(value)) {
    if (!known.includes(key))
      throw new ConfigurationError(`${field}.${key}`, `is not an option (known: ${known.join(', ')})`);
  }
}

/**
 * Validates the agent option `guardrails` (docs/guardrails.md). Throws `ConfigurationError` naming the field
 * (e.g. `agent.guardrails.input[0].check`) for anything invalid, for two guardrails of one kind with one name, and
 * for a key it does not know at any level (a typo such as `agent.guardrails.inputs` or `…output[0].mod` would
 * otherwise turn a guardrail off without a word).
 */
export function checkGuardrails(guardrails: Guardrails<any>, field: string): void {
  checkObject(guardrails, field);
  checkKnownKeys(guardrails, TOP_KEYS, field);
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
      checkKnownKeys(guard, KEYS[kind], at);
      if (typeof guard.name !== 'string' || guard.name.length === 0)
        throw new ConfigurationError(`${at}.name`, 'must be a non-empty string');
      if (names.has(guard.name)) throw new ConfigurationError(`${at}.name`, `duplicate guardrail name "${guard.name}"`);
      names.add(guard.name);
      if (typeof guard.check !== 'function')
        throw new ConfigurationError(`${at}.check`, 'must be a function (input, ctx) => verdict');
      if (kind === 'output') checkRefusal(guard, at);
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

/** `onTrip` and `refusal` of an output guardrail. */
function checkRefusal(guard: Record<string, unknown>, at: string): void {
  if (guard.onTrip !== undefined && guard.onTrip !== 'fail' && guard.onTrip !== 'refuse')
    throw new ConfigurationError(`${at}.onTrip`, "must be 'fail' or 'refuse'");
  if (guard.refusal !== undefined && (typeof guard.refusal !== 'string' || guard.refusal.trim() === ''))
    throw new ConfigurationError(`${at}.refusal`, 'must be a non-empty string');
  if (guard.refusal !== undefined && guard.onTrip !== 'refuse')
    throw new ConfigurationError(`${at}.refusal`, "is used only with onTrip: 'refuse'");
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
