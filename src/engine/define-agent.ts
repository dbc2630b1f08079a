import { DEFAULTS } from '../defaults.js';
import { checkDurationMs } from '../duration.js';
import { ConfigurationError } from '../errors.js';
import { validateTool } from '../tools/tool.js';
import { checkCompaction } from './compaction/policy.js';
import { checkGuardrails } from '../guardrails/validate.js';
import { checkOutputOptions } from './output.js';
import { agentAsTool } from './as-tool.js';
import type { Agent, AgentDefinition, AsToolOptions } from './types.js';
import { checkPositiveInt, checkHooks, checkObject } from './validate.js';

/** Agents made by defineAgent (so run() can accept a plain definition and validate it once). */
const defined = new WeakSet<object>();

/**
 * Validates and freezes an agent definition. Defaults:
 * `tools: []`, `maxTurns: DEFAULTS.maxTurns` (20), sequential tool dispatch,
 * `outputRetries: DEFAULTS.outputRetries` (1). `O`, the structured answer's type, is inferred
 * from `output` (docs/run-control.md, "Structured output").
 * Throws `ConfigurationError` naming the field (e.g. `agent.tools[1].name`,
 * `agent.maxTurns`, `agent.output`, `agent.outputRetries`) for anything invalid, and for two
 * tools with one name.
 *
 * @example
 * const agent = defineAgent({ name: 'analyst', instructions: 'You analyse logs.', model, tools: [readLog] });
 * const typed = defineAgent({ name: 'grader', instructions: '…', model, output: z.object({ score: z.number() }) });
 */
export function defineAgent<C = unknown, O = unknown>(definition: AgentDefinition<C, O>): Agent<C, O> {
  if (defined.has(definition as object)) return definition as Agent<C, O>;
  checkObject(definition, 'agent');
  if (typeof definition.name !== 'string' || definition.name.length === 0)
    throw new ConfigurationError('agent.name', 'must be a non-empty string');
  if (typeof definition.instructions !== 'string')
    throw new ConfigurationError('agent.instructions', 'must be a string');
  checkProvider(definition.model, 'agent.model');
  if (definition.fallbackModel !== undefined) checkProvider(definition.fallbackModel, 'agent.fallbackModel');
  const tools = definition.tools ?? [];
  if (!Array.isArray(tools)) throw new ConfigurationError('agent.tools', 'must be an array of tools');
  const names = new Set<string>();
  tools.forEach((t, i) => {
    validateTool(t, `agent.tools[${i}]`);
    if (names.has(t.name)) throw new ConfigurationError(`agent.tools[${i}].name`, `duplicate tool name "${t.name}"`);
    names.add(t.name);
  });
  const maxTurns = definition.maxTurns ?? DEFAULTS.maxTurns;
  checkPositiveInt(maxTurns, 'agent.maxTurns');
  if (definition.parallelToolCalls !== undefined) {
    checkObject(definition.parallelToolCalls, 'agent.parallelToolCalls');
    checkPositiveInt(definition.parallelToolCalls.maxConcurrency, 'agent.parallelToolCalls.maxConcurrency');
  }
  if (definition.breaker !== undefined) {
    checkObject(definition.breaker, 'agent.breaker');
    if (definition.breaker.failureThreshold !== undefined)
      checkPositiveInt(definition.breaker.failureThreshold, 'agent.breaker.failureThreshold');
    if (definition.breaker.cooldownMs !== undefined)
      checkDurationMs(definition.breaker.cooldownMs, 'agent.breaker.cooldownMs');
  }
  if (definition.hooks !== undefined) checkHooks(definition.hooks, 'agent.hooks');
  if (definition.contextWindow !== undefined) checkPositiveInt(definition.contextWindow, 'agent.contextWindow');
  if (definition.compaction !== undefined) checkCompaction(definition.compaction, 'agent.compaction');
  if (definition.guardrails !== undefined) checkGuardrails(definition.guardrails, 'agent.guardrails');
  const outputRetries = checkOutputOptions(definition.output, definition.outputRetries);
  const asTool = (o: AsToolOptions<any, C>) => agentAsTool(agent, o);
  const frozen = { ...definition, tools: Object.freeze([...tools]), maxTurns, outputRetries, asTool };
  const agent: Agent<C, O> = Object.freeze(frozen);
  defined.add(agent);
  return agent;
}

function checkProvider(model: unknown, field: string): void {
  const m = model as { id?: unknown; call?: unknown } | null;
  if (m === null || typeof m !== 'object' || typeof m.id !== 'string' || typeof m.call !== 'function')
    throw new ConfigurationError(field, 'must be a ModelProvider ({ id: string; call(request) })');
}
