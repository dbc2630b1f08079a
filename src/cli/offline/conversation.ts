/**
 * Reads a Chat Completions request body into what the offline model needs:
 * the task (the last user message), the tool calls made since then with their
 * results, and the names of the tools offered.
 */

/** One tool call the model made since the task, with its result. */
export interface Step {
  readonly name: string;
  readonly args: Readonly<Record<string, unknown>>;
  /** The tool message's content ('' while none arrived). */
  readonly output: string;
  /** The engine sends tool errors as `Error: <message>`. */
  readonly isError: boolean;
}

/** What the offline model reads from a request. */
export interface Conversation {
  readonly task: string;
  readonly steps: readonly Step[];
  readonly tools: ReadonlySet<string>;
}

type Json = Record<string, unknown>;
/** True for a JSON object (not null, not an array). */
export const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Message content as text: a string, or the text parts of a content array. */
export function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content))
    return content.map((p) => (isObject(p) && typeof p['text'] === 'string' ? p['text'] : '')).join('');
  return '';
}

function parseArgs(text: unknown): Json {
  try {
    const value: unknown = JSON.parse(typeof text === 'string' && text !== '' ? text : '{}');
    return isObject(value) ? value : {};
  } catch {
    return {};
  }
}

/**
 * Reads `body` (a parsed `POST /chat/completions` body).
 * @throws Error when `messages` is missing or not an array.
 */
export function readConversation(body: unknown): Conversation {
  if (!isObject(body) || !Array.isArray(body['messages'])) throw new Error('messages: must be an array');
  const messages = body['messages'] as unknown[];
  const tools = new Set<string>();
  for (const t of Array.isArray(body['tools']) ? (body['tools'] as unknown[]) : []) {
    const fn = isObject(t) ? t['function'] : undefined;
    if (isObject(fn) && typeof fn['name'] === 'string') tools.add(fn['name']);
  }
  let lastUser = -1;
  messages.forEach((m, i) => {
    if (isObject(m) && m['role'] === 'user') lastUser = i;
  });
  const task = lastUser >= 0 ? contentText((messages[lastUser] as Json)['content']) : '';
  const calls = new Map<string, { name: string; args: Json }>();
  const order: string[] = [];
  const outputs = new Map<string, string>();
  for (const m of messages.slice(lastUser + 1)) {
    if (!isObject(m)) continue;
    if (m['role'] === 'assistant' && Array.isArray(m['tool_calls'])) {
      for (const c of m['tool_calls'] as unknown[]) {
        if (!isObject(c) || !isObject(c['function']) || typeof c['id'] !== 'string') continue;
        calls.set(c['id'], { name: String(c['function']['name']), args: parseArgs(c['function']['arguments']) });
        order.push(c['id']);
      }
    } else if (m['role'] === 'tool' && typeof m['tool_call_id'] === 'string') {
      outputs.set(m['tool_call_id'], contentText(m['content']));
    }
  }
  const steps = order.map((id): Step => {
    const output = outputs.get(id) ?? '';
    return { ...calls.get(id)!, output, isError: output.startsWith('Error:') };
  });
  return { task, steps, tools };
}
