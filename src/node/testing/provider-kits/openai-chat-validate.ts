/** What Chat Completions (`POST /v1/chat/completions`) refuses with a 400: the `openaiChatWire` validator. */
import { TOOL_NAME, argumentsFault, isRecord } from './openai-wire.js';

const ROLES = new Set(['system', 'developer', 'user', 'assistant', 'tool']);

/** Why the API would refuse the tool definitions, or undefined. */
function toolsFault(tools: unknown): string | undefined {
  if (tools === undefined) return undefined;
  if (!Array.isArray(tools) || tools.length === 0) return 'tools must be a non-empty array';
  for (const [i, t] of tools.entries()) {
    const fn = isRecord(t) ? t['function'] : undefined;
    if (!isRecord(t) || t['type'] !== 'function' || !isRecord(fn)) return `tools[${i}] must be a function tool`;
    if (typeof fn['name'] !== 'string' || !TOOL_NAME.test(fn['name'])) return `tools[${i}].function.name is invalid`;
    if (fn['parameters'] !== undefined && !isRecord(fn['parameters']))
      return `tools[${i}].function.parameters must be an object`;
  }
  return undefined;
}

/** Why the API would refuse one assistant message's `tool_calls`; adds their ids to `seen`. */
function toolCallsFault(calls: unknown, at: string, seen: Set<string>): string | undefined {
  if (!Array.isArray(calls) || calls.length === 0) return `${at}.tool_calls must be a non-empty array`;
  for (const [j, c] of calls.entries()) {
    const where = `${at}.tool_calls[${j}]`;
    const fn = isRecord(c) ? c['function'] : undefined;
    if (!isRecord(c) || c['type'] !== 'function' || !isRecord(fn)) return `${where} must be a function call`;
    const id = c['id'];
    if (typeof id !== 'string' || id === '') return `${where}.id must be a non-empty string`;
    if (seen.has(id)) return `${where}: duplicate tool call id ${id}`;
    seen.add(id);
    if (typeof fn['name'] !== 'string' || fn['name'] === '') return `${where}.function.name is required`;
    const args = argumentsFault(fn['arguments']);
    if (args) return `${where}.function: ${args}`;
  }
  return undefined;
}

/**
 * Why Chat Completions would answer 400 to `body`, in its own words where it has them, or undefined:
 * a body without `model` or `messages`; `stream_options` without `stream: true`; an unknown role; a
 * `tool` message that answers no `tool_calls` entry of the assistant message just before it; an
 * assistant message with `tool_calls` not followed by a tool message for each id; a call id used twice;
 * arguments that are not a JSON object; an assistant message with neither content nor tool calls.
 */
export function chatRequestFault(body: unknown): string | undefined {
  if (!isRecord(body)) return 'the body must be a JSON object';
  if (typeof body['model'] !== 'string' || body['model'] === '') return 'model is required';
  if (body['stream'] !== undefined && typeof body['stream'] !== 'boolean') return 'stream must be a boolean';
  if (body['stream_options'] !== undefined && body['stream'] !== true)
    return "The 'stream_options' parameter is only allowed when 'stream' is enabled.";
  const tools = toolsFault(body['tools']);
  if (tools) return tools;
  const messages = body['messages'];
  if (!Array.isArray(messages) || messages.length === 0) return 'messages must be a non-empty array';
  const seen = new Set<string>();
  let pending = new Set<string>();
  const unanswered = (at: string) =>
    "An assistant message with 'tool_calls' must be followed by tool messages responding to each " +
    `'tool_call_id'. The following tool_call_ids did not have response messages: ${[...pending].join(', ')} ` +
    `(at ${at})`;
  for (const [i, m] of messages.entries()) {
    const at = `messages[${i}]`;
    if (!isRecord(m) || typeof m['role'] !== 'string' || !ROLES.has(m['role'])) return `${at}.role is invalid`;
    if (m['role'] === 'tool') {
      const id = m['tool_call_id'];
      if (typeof id !== 'string' || !pending.has(id))
        return (
          `Invalid parameter: ${at}: messages with role 'tool' must be a response to a preceeding message with ` +
          `'tool_calls' (tool_call_id ${String(id)})`
        );
      if (typeof m['content'] !== 'string' && !Array.isArray(m['content'])) return `${at}.content is required`;
      pending.delete(id);
      continue;
    }
    if (pending.size > 0) return unanswered(at);
    pending = new Set<string>();
    const content = m['content'];
    const hasContent = typeof content === 'string' || Array.isArray(content);
    if (m['role'] !== 'assistant') {
      if (!hasContent) return `${at}.content is required`;
      continue;
    }
    if (content !== null && content !== undefined && !hasContent) return `${at}.content must be text, parts or null`;
    if (m['tool_calls'] === undefined) {
      if (!hasContent) return `${at}: content is required unless tool_calls is given`;
      continue;
    }
    const calls = toolCallsFault(m['tool_calls'], at, seen);
    if (calls) return calls;
    pending = new Set((m['tool_calls'] as { id: string }[]).map((c) => c.id));
  }
  return pending.size > 0 ? unanswered('the end of messages') : undefined;
}

/** The invalid variants of a valid tool-loop request (see `WireKit.invalidVariants`). */
export function chatInvalidVariants(body: unknown): { fault: string; body: unknown }[] {
  if (!isRecord(body) || !Array.isArray(body['messages'])) return [];
  const messages = body['messages'] as Record<string, any>[];
  const callers = messages.flatMap((m, i) => (m['role'] === 'assistant' && m['tool_calls'] ? [i] : []));
  const toolAt = messages.flatMap((m, i) => (m['role'] === 'tool' ? [i] : []));
  if (callers.length === 0 || toolAt.length === 0) return [];
  const firstId: string = messages[callers[0]!]!['tool_calls'][0].id;
  const variant = (fault: string, change: (ms: Record<string, any>[]) => void) => {
    const copy = structuredClone(messages);
    change(copy);
    return { fault, body: { ...body, messages: copy } };
  };
  return [
    variant('an assistant tool call without its tool message', (ms) => void ms.splice(toolAt.at(-1)!, 1)),
    variant('a tool message without the assistant tool call before it', (ms) => void ms.splice(callers.at(-1)!, 1)),
    variant('a tool message before its assistant tool call', (ms) => {
      const [caller] = ms.splice(callers[0]!, 1);
      ms.splice(callers[0]! + 1, 0, caller!);
    }),
    variant('a tool call id used twice', (ms) => {
      const last = ms[callers.at(-1)!]!;
      last['tool_calls'][0].id = firstId;
      ms[callers.at(-1)! + 1]!['tool_call_id'] = firstId;
    }),
    variant('tool call arguments that are not a JSON object', (ms) => {
      ms[callers[0]!]!['tool_calls'][0].function.arguments = '{"city": "Par';
    }),
  ];
}
