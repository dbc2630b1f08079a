/**
 * What Anthropic's Messages API (`POST /v1/messages`) refuses with a 400 `invalid_request_error`: the `anthropicWire`
 * validator, and the rules any Anthropic-shaped test server shares (`anthropicMessagesFault` with its own
 * {@link ThinkingLedger}: the local server of loopctl's own specs remembers what it sent; the kit checks a signature
 * derived from the text, without state).
 */

type Block = Record<string, unknown>;

/**
 * How a validator knows the thinking blocks it served (the real API checks their signatures):
 * - `block(block, content, at)`: why a `thinking` / `redacted_thinking` block in an assistant message (`content` is
 *   that message's blocks, `at` its path, e.g. `messages.1.content.0`) is refused (an unknown signature, a block
 *   modified), or undefined;
 * - `dropped(content, at)`: why an assistant message with `tool_use` blocks is refused because thinking blocks the
 *   answer came with are missing, or undefined.
 */
export interface ThinkingLedger {
  block(block: Readonly<Block>, content: readonly Block[], at: string): string | undefined;
  dropped(content: readonly Block[], at: string): string | undefined;
}

/**
 * The signature `anthropicWire` gives the thinking block of an answer: derived from its thinking text and the ids of
 * the `tool_use` blocks of the same message, so a validator without state can tell the block modified, its signature
 * changed, or the block moved to another message. Base64 of `kit-signature:<ids joined by ,>:<thinking>`.
 */
export function anthropicKitSignature(thinking: string, toolUseIds: readonly string[]): string {
  return Buffer.from(`kit-signature:${toolUseIds.join(',')}:${thinking}`, 'utf8').toString('base64');
}

const toolUseIds = (content: readonly Block[]): string[] =>
  content.flatMap((b) => (b['type'] === 'tool_use' && typeof b['id'] === 'string' ? [b['id']] : []));

/**
 * The stateless ledger of `anthropicWire`: a `thinking` block is known when its `signature` is
 * {@link anthropicKitSignature} of its text and its message's tool ids (the kit sends no `redacted_thinking`, so one
 * is unknown). A dropped block is caught by the API's own rule on the turn being continued (see
 * {@link anthropicMessagesFault}), so `dropped` finds nothing more.
 */
export const kitThinkingLedger: ThinkingLedger = {
  block(block, content, at) {
    if (block['type'] !== 'thinking') return `${at}: Invalid \`data\` in \`redacted_thinking\` block`;
    if (typeof block['thinking'] !== 'string' || typeof block['signature'] !== 'string') {
      return `${at}: a \`thinking\` block needs \`thinking\` and \`signature\` strings`;
    }
    const keys = Object.keys(block).sort().join(',');
    if (keys !== 'signature,thinking,type') return `${at}: \`thinking\` blocks cannot be modified (fields ${keys})`;
    if (block['signature'] !== anthropicKitSignature(block['thinking'], toolUseIds(content))) {
      return `${at}: Invalid \`signature\` in \`thinking\` block`;
    }
    return undefined;
  },
  dropped: () => undefined,
};

/**
 * Why the Messages API would refuse `body`, in words like the API's, or undefined when it is valid. Checked: body
 * fields (`model`, `max_tokens`, `messages`, `system`, `tools`, `thinking`); roles (first `user`, alternating,
 * content non-empty, text blocks non-empty); tool use (ids unique, `input` an object, every `tool_use` answered by a
 * `tool_result` in the very next user message, placed first in it; every `tool_result` answering a `tool_use` of the
 * message before); thinking (only in assistant messages, each block known to `ledger` and unchanged, none dropped
 * from a message with its tool calls, and with `thinking` enabled or adaptive the assistant message opening the turn
 * that tool results continue starts with a thinking block); at most 4 `cache_control` breakpoints.
 */
export function anthropicMessagesFault(body: any, ledger: ThinkingLedger): string | undefined {
  if (typeof body !== 'object' || body === null) return 'the body must be a JSON object';
  if (typeof body.model !== 'string' || body.model === '') return 'model: Field required';
  if (body.max_tokens === undefined) return 'max_tokens: Field required';
  if (!Number.isInteger(body.max_tokens) || body.max_tokens < 1) return 'max_tokens: must be a positive integer';
  if (!Array.isArray(body.messages) || body.messages.length === 0) return 'messages: at least one message is required';
  if (body.system !== undefined && typeof body.system !== 'string') {
    if (!Array.isArray(body.system) || body.system.some((b: any) => b?.type !== 'text' || !b.text)) {
      return 'system: must be a string or a list of non-empty text blocks';
    }
  }
  for (const [i, tool] of (body.tools ?? []).entries()) {
    if (typeof tool?.name !== 'string' || tool?.input_schema?.type !== 'object') {
      return `tools.${i}: a custom tool needs a name and an input_schema of type "object"`;
    }
  }
  const thinking = body.thinking;
  if (thinking?.type === 'enabled') {
    if (!Number.isInteger(thinking.budget_tokens) || thinking.budget_tokens < 1024) {
      return 'thinking.enabled.budget_tokens: Input should be greater than or equal to 1024';
    }
    if (thinking.budget_tokens >= body.max_tokens) return '`max_tokens` must be greater than `thinking.budget_tokens`';
  }
  const messages: any[] = body.messages;
  if (messages[0]?.role !== 'user') return 'messages: the first message must use the "user" role';
  let breakpoints = (body.tools ?? []).filter((t: any) => t?.cache_control).length;
  if (Array.isArray(body.system)) breakpoints += body.system.filter((b: any) => b?.cache_control).length;
  const ids = new Set<string>();
  for (let i = 0; i < messages.length; i++) {
    const fault = messageFault(messages, i, ledger, ids);
    if (fault) return fault;
    const content = messages[i].content;
    if (Array.isArray(content)) breakpoints += content.filter((b: any) => b?.cache_control).length;
  }
  if (thinking?.type === 'enabled' || thinking?.type === 'adaptive') {
    const fault = openingThinkingFault(messages);
    if (fault) return fault;
  }
  if (breakpoints > 4) return `A maximum of 4 blocks with cache_control may be provided. Found ${breakpoints}.`;
  return undefined;
}

/** The checks of `messages[i]` alone and with its neighbours; `ids` collects the tool_use ids seen so far. */
function messageFault(messages: any[], i: number, ledger: ThinkingLedger, ids: Set<string>): string | undefined {
  const message = messages[i];
  const at = `messages.${i}`;
  if (message?.role !== 'user' && message?.role !== 'assistant') return `${at}.role: must be "user" or "assistant"`;
  if (i > 0 && messages[i - 1].role === message.role)
    return `${at}: roles must alternate between "user" and "assistant"`;
  const content = typeof message.content === 'string' ? [{ type: 'text', text: message.content }] : message.content;
  const last = i === messages.length - 1;
  if (!Array.isArray(content) || (content.length === 0 && !(last && message.role === 'assistant'))) {
    return `${at}: all messages must have non-empty content except for the optional final assistant message`;
  }
  for (const [j, block] of content.entries()) {
    if (block?.type === 'text' && (typeof block.text !== 'string' || block.text === '')) {
      return `${at}.content.${j}.text: text content blocks must be non-empty`;
    }
    if (block?.type === 'thinking' || block?.type === 'redacted_thinking') {
      if (message.role !== 'assistant')
        return `${at}.content.${j}: thinking blocks may only appear in assistant messages`;
      const fault = ledger.block(block, content, `${at}.content.${j}`);
      if (fault) return fault;
    }
    if (block?.type === 'tool_use') {
      if (typeof block.input !== 'object' || block.input === null || Array.isArray(block.input)) {
        return `${at}.content.${j}.tool_use.input: Input should be a valid dictionary`;
      }
      if (ids.has(block.id)) return `${at}.content.${j}: \`tool_use\` ids must be unique (${String(block.id)})`;
      ids.add(block.id);
    }
  }
  if (message.role === 'user') return resultsFault(messages, i, content);
  const uses = content.filter((b: any) => b?.type === 'tool_use');
  if (uses.length === 0) return undefined;
  const dropped = ledger.dropped(content, at);
  if (dropped) return dropped;
  const next = messages[i + 1];
  const answers = Array.isArray(next?.content) ? next.content : [];
  const answered = answers.filter((b: any) => b?.type === 'tool_result').map((b: any) => b.tool_use_id);
  const missing = uses.filter((u: any) => !answered.includes(u.id)).map((u: any) => u.id);
  if (missing.length > 0) {
    return (
      `messages.${i + 1}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ` +
      `${missing.join(', ')}. Each \`tool_use\` block must have a corresponding \`tool_result\` block in the ` +
      'next message.'
    );
  }
  const firstOther = answers.findIndex((b: any) => b?.type !== 'tool_result');
  if (firstOther !== -1 && answers.slice(firstOther).some((b: any) => b?.type === 'tool_result')) {
    return `messages.${i + 1}: tool_result blocks must come first in the content`;
  }
  return undefined;
}

/** Every `tool_result` of user message `i` answers a `tool_use` of the message before it. */
function resultsFault(messages: any[], i: number, content: any[]): string | undefined {
  const previous = messages[i - 1];
  const prior = Array.isArray(previous?.content) ? previous.content : [];
  for (const [j, block] of content.entries()) {
    if (block?.type !== 'tool_result') continue;
    if (!prior.some((b: any) => b?.type === 'tool_use' && b.id === block.tool_use_id)) {
      const found = `unexpected \`tool_use_id\` found in \`tool_result\` blocks: ${block.tool_use_id}`;
      return `messages.${i}.content.${j}: ${found}`;
    }
  }
  return undefined;
}

/**
 * With thinking on, the assistant turn that tool results continue (from the first assistant message after the last
 * user message with more than tool results) must open with a thinking block: a block dropped there is refused.
 */
function openingThinkingFault(messages: any[]): string | undefined {
  let lastText = -1;
  messages.forEach((m: any, i: number) => {
    const text = typeof m.content === 'string' || m.content.some((b: any) => b?.type !== 'tool_result');
    if (m.role === 'user' && text) lastText = i;
  });
  const opening = messages[lastText + 1];
  const tail = messages.at(-1);
  const answersTools =
    tail?.role === 'user' && Array.isArray(tail.content) && tail.content.some((b: any) => b?.type === 'tool_result');
  if (opening?.role !== 'assistant' || !answersTools) return undefined;
  const first = Array.isArray(opening.content) ? opening.content[0]?.type : 'text';
  if (first === 'thinking' || first === 'redacted_thinking') return undefined;
  return (
    `messages.${lastText + 1}.content.0.type: Expected \`thinking\` or \`redacted_thinking\`, but found ` +
    `\`${String(first)}\`. When \`thinking\` is enabled, a final \`assistant\` message must start with a ` +
    'thinking block.'
  );
}

/**
 * Variants of a valid tool-loop body (its first assistant message holding a thinking block, `thinking` enabled) that
 * the Messages API refuses, one per rule of {@link anthropicMessagesFault} worth pinning with
 * {@link kitThinkingLedger}.
 */
export function anthropicInvalidVariants(body: unknown): { fault: string; body: unknown }[] {
  type Message = { role: string; content: Block[] };
  const copy = () => structuredClone(body) as { messages: Message[]; max_tokens?: unknown };
  const variants: { fault: string; body: unknown }[] = [];
  const edit = (fault: string, change: (b: ReturnType<typeof copy>) => void) => {
    const b = copy();
    change(b);
    variants.push({ fault, body: b });
  };
  const lastUse = (b: ReturnType<typeof copy>) => lastIndex(b.messages, (m) => hasType(m.content, 'tool_use'));
  const thought = (b: ReturnType<typeof copy>) => {
    const message = b.messages.find((m) => m.role === 'assistant' && hasType(m.content, 'thinking'));
    if (!message) throw new Error('anthropicInvalidVariants: the body has no thinking block to alter');
    return { message, block: message.content.find((c) => c['type'] === 'thinking')! };
  };
  edit('a tool_use without its tool_result', (b) => void b.messages.splice(lastUse(b) + 1, 1));
  edit('a tool_result without its tool_use', (b) => {
    const content = b.messages[lastUse(b)]!.content;
    content.splice(lastIndex(content, isUse), 1);
  });
  edit('a dropped thinking block', (b) => {
    const { message, block } = thought(b);
    message.content.splice(message.content.indexOf(block), 1);
  });
  edit('an altered thinking block', (b) => void (thought(b).block['thinking'] = 'edited thinking'));
  edit(
    'an altered signature',
    (b) => void (thought(b).block['signature'] = `${String(thought(b).block['signature'])}x`),
  );
  edit('a tool_use id used twice', (b) => {
    const uses = b.messages.flatMap((m) => (Array.isArray(m.content) ? m.content : [])).filter(isUse);
    uses[uses.length - 1]!['id'] = uses[0]!['id'];
  });
  edit('tool_use input that is not an object', (b) => {
    b.messages[lastUse(b)]!.content.find((c) => c['type'] === 'tool_use')!['input'] = '{"city":"Paris"}';
  });
  edit('roles that do not alternate', (b) => void b.messages.splice(1, 0, { ...b.messages[0]! }));
  edit('no max_tokens', (b) => void delete b.max_tokens);
  return variants;
}

function lastIndex<T>(list: readonly T[], test: (item: T) => boolean): number {
  for (let i = list.length - 1; i >= 0; i--) if (test(list[i]!)) return i;
  return -1;
}
const isUse = (c: Block): boolean => c['type'] === 'tool_use';
const hasType = (content: unknown, type: string): boolean =>
  Array.isArray(content) && content.some((c: any) => c?.type === type);
