/**
 * Builders of OpenAI wire bodies (Chat Completions chunks and completions, Responses API bodies) and the
 * checks the OpenAI kits' validators share. `test/support/openai-server.ts` re-exports the builders.
 */

/** One SSE `data:` frame: `data: <json>\n\n`. */
export const sseData = (payload: unknown): string => `data: ${JSON.stringify(payload)}\n\n`;
/** The Chat Completions stream terminator. */
export const SSE_DONE = 'data: [DONE]\n\n';
/** One named SSE frame of the Responses API: `event: <type>\ndata: {"type":"<type>",…}\n\n`. */
export const sseEvent = (type: string, body: Record<string, unknown>): string =>
  `event: ${type}\ndata: ${JSON.stringify({ type, ...body })}\n\n`;

/** Wire shape of a Chat Completions usage object (`prompt_tokens`, `completion_tokens`, `total_tokens`). */
export const wireUsage = (prompt: number, completion: number) => ({
  prompt_tokens: prompt,
  completion_tokens: completion,
  total_tokens: prompt + completion,
});

const meta = (object: string) => ({ id: 'test-id', object, created: 0, model: 'test-model' });

/** A Chat Completions chunk for choice 0 with the given `delta` (and optional finish reason / top-level usage). */
export function chatChunk(
  delta: Record<string, unknown>,
  extra: { finishReason?: string | null; usage?: unknown; choices?: unknown[] } = {},
) {
  const choices = extra.choices ?? [{ index: 0, delta, finish_reason: extra.finishReason ?? null }];
  return { ...meta('chat.completion.chunk'), choices, ...(extra.usage !== undefined ? { usage: extra.usage } : {}) };
}

/** A tool-call delta entry for `chatChunk({ tool_calls: [...] })`. */
export const toolCallDelta = (index: number, args: string, id?: string, name?: string) => ({
  index,
  ...(id ? { id, type: 'function' } : {}),
  function: { ...(name ? { name } : {}), arguments: args },
});

type Call = { id: string; name: string; arguments: string };
/** A non-streamed Chat Completion body (choice 0). */
export function chatCompletion(
  message: { content?: string | null; tool_calls?: Call[]; refusal?: string | null },
  finishReason = 'stop',
  usage: unknown = wireUsage(10, 5),
) {
  const calls = message.tool_calls?.map((c) => ({
    id: c.id,
    type: 'function',
    function: { name: c.name, arguments: c.arguments },
  }));
  const msg = {
    role: 'assistant',
    content: message.content ?? null,
    refusal: message.refusal ?? null,
    ...(calls ? { tool_calls: calls } : {}),
  };
  return {
    ...meta('chat.completion'),
    choices: [{ index: 0, finish_reason: finishReason, logprobs: null, message: msg }],
    usage,
  };
}

/** A non-streamed Responses API body with a message and/or function calls; `usage` is `[input, output]`. */
export function responsesBody(opts: {
  text?: string;
  calls?: { callId: string; name: string; arguments: string }[];
  usage?: [number, number];
}) {
  const output: unknown[] = [];
  if (opts.text !== undefined) {
    output.push({
      id: 'msg_1',
      type: 'message',
      role: 'assistant',
      status: 'completed',
      content: [{ type: 'output_text', text: opts.text, annotations: [] }],
    });
  }
  for (const [i, c] of (opts.calls ?? []).entries()) {
    output.push({
      id: `fc_${i}`,
      type: 'function_call',
      status: 'completed',
      call_id: c.callId,
      name: c.name,
      arguments: c.arguments,
    });
  }
  const [input, out] = opts.usage ?? [10, 5];
  const usage = { input_tokens: input, output_tokens: out, total_tokens: input + out };
  return {
    ...meta('response'),
    created_at: 0,
    status: 'completed',
    incomplete_details: null,
    error: null,
    output,
    usage,
  };
}

/** OpenAI's error body `{ error: { message, type, param, code } }` for `status`, with `retry-after` in seconds. */
export function openaiError(spec: { status: number; message: string; retryAfterMs?: number }) {
  const [type, code] =
    spec.status === 429
      ? ['requests', 'rate_limit_exceeded']
      : spec.status >= 500
        ? ['server_error', null]
        : ['invalid_request_error', null];
  const headers: Record<string, string> =
    spec.retryAfterMs === undefined ? {} : { 'retry-after': String(Math.ceil(spec.retryAfterMs / 1000)) };
  return { status: spec.status, headers, body: { error: { message: spec.message, type, param: null, code } } };
}

/** The frames up to and including the first that `carries` (all of them when none does). */
export function upToFirst(frames: readonly string[], carries: (frame: string) => boolean): string[] {
  const at = frames.findIndex(carries);
  return frames.slice(0, at < 0 ? frames.length : at + 1);
}

/** A plain JSON object (not null, not an array). */
export const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** Why `args` (a tool call's arguments) would be refused: they must be text holding a JSON object. */
export function argumentsFault(args: unknown): string | undefined {
  if (typeof args !== 'string') return 'arguments must be a string';
  try {
    return isRecord(JSON.parse(args)) ? undefined : 'arguments must be a JSON object';
  } catch {
    return 'arguments are not valid JSON';
  }
}

/** A tool or function name the API accepts. */
export const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;
