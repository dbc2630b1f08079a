/** What the Responses API (`POST /v1/responses`) refuses with a 400: the `openaiResponsesWire` validator. */
import { TOOL_NAME, argumentsFault, isRecord } from './openai-wire.js';

const ROLES = new Set(['system', 'developer', 'user', 'assistant']);

/** Why the API would refuse the tool definitions, or undefined. */
function toolsFault(tools: unknown): string | undefined {
  if (tools === undefined) return undefined;
  if (!Array.isArray(tools)) return 'tools must be an array';
  for (const [i, t] of tools.entries()) {
    if (!isRecord(t) || t['type'] !== 'function') return `tools[${i}] must be a function tool`;
    if (typeof t['name'] !== 'string' || !TOOL_NAME.test(t['name'])) return `tools[${i}].name is invalid`;
    if (t['parameters'] !== undefined && !isRecord(t['parameters'])) return `tools[${i}].parameters must be an object`;
  }
  return undefined;
}

/** Why the API would refuse one input item; tracks the calls still waiting for their output in `open`. */
function itemFault(item: unknown, at: string, seen: Set<string>, open: Set<string>): string | undefined {
  if (!isRecord(item)) return `${at} must be an object`;
  const type = item['type'] ?? (item['role'] !== undefined ? 'message' : undefined);
  switch (type) {
    case 'message': {
      if (typeof item['role'] !== 'string' || !ROLES.has(item['role'])) return `${at}.role is invalid`;
      const content = item['content'];
      return typeof content === 'string' || Array.isArray(content) ? undefined : `${at}.content is required`;
    }
    case 'function_call': {
      const id = item['call_id'];
      if (typeof id !== 'string' || id === '') return `${at}.call_id must be a non-empty string`;
      if (seen.has(id)) return `${at}: duplicate call_id ${id}`;
      if (typeof item['name'] !== 'string' || item['name'] === '') return `${at}.name is required`;
      const args = argumentsFault(item['arguments']);
      if (args) return `${at}: ${args}`;
      seen.add(id);
      open.add(id);
      return undefined;
    }
    case 'function_call_output': {
      const id = item['call_id'];
      if (typeof id !== 'string' || !open.has(id))
        return `No tool call found for function call output with call_id ${String(id)}. (at ${at})`;
      if (typeof item['output'] !== 'string' && !Array.isArray(item['output'])) return `${at}.output is required`;
      open.delete(id);
      return undefined;
    }
    case 'reasoning':
      return undefined;
    default:
      return `${at}.type ${JSON.stringify(type)} is not an input item type`;
  }
}

/**
 * Why the Responses API would answer 400 to `body`, in its own words where it has them, or undefined:
 * a body without `model` or `input`; a `function_call` without a `function_call_output` of its
 * `call_id`; an output without a `function_call` before it; a `call_id` used twice; arguments that are
 * not a JSON object; an item of an unknown type.
 */
export function responsesRequestFault(body: unknown): string | undefined {
  if (!isRecord(body)) return 'the body must be a JSON object';
  if (typeof body['model'] !== 'string' || body['model'] === '') return 'model is required';
  if (body['stream'] !== undefined && typeof body['stream'] !== 'boolean') return 'stream must be a boolean';
  if (body['instructions'] !== undefined && typeof body['instructions'] !== 'string')
    return 'instructions must be a string';
  const tools = toolsFault(body['tools']);
  if (tools) return tools;
  const input = body['input'];
  if (typeof input === 'string') return undefined;
  if (!Array.isArray(input) || input.length === 0) return 'input must be a string or a non-empty array';
  const seen = new Set<string>();
  const open = new Set<string>();
  for (const [i, item] of input.entries()) {
    const fault = itemFault(item, `input[${i}]`, seen, open);
    if (fault) return fault;
  }
  return open.size > 0 ? `No tool output found for function call ${[...open].join(', ')}.` : undefined;
}

/** The invalid variants of a valid tool-loop request (see `WireKit.invalidVariants`). */
export function responsesInvalidVariants(body: unknown): { fault: string; body: unknown }[] {
  if (!isRecord(body) || !Array.isArray(body['input'])) return [];
  const input = body['input'] as Record<string, any>[];
  const calls = input.flatMap((item, i) => (item['type'] === 'function_call' ? [i] : []));
  const outputs = input.flatMap((item, i) => (item['type'] === 'function_call_output' ? [i] : []));
  if (calls.length < 2 || outputs.length === 0) return [];
  const variant = (fault: string, change: (items: Record<string, any>[]) => void) => {
    const copy = structuredClone(input);
    change(copy);
    return { fault, body: { ...body, input: copy } };
  };
  return [
    variant('a function_call without its function_call_output', (items) => void items.splice(outputs.at(-1)!, 1)),
    variant('a function_call_output without its function_call', (items) => void items.splice(calls[0]!, 1)),
    variant('a call_id used twice', (items) => {
      const id: string = items[calls[0]!]!['call_id'];
      const last = items[calls.at(-1)!]!;
      const output = items.find((o) => o['type'] === 'function_call_output' && o['call_id'] === last['call_id'])!;
      last['call_id'] = id;
      output['call_id'] = id;
    }),
    variant('function_call arguments that are not a JSON object', (items) => {
      items[calls[0]!]!['arguments'] = '[1, 2]';
    }),
  ];
}
