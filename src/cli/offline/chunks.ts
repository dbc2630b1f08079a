/**
 * Builds the Chat Completions wire objects of the offline model: stream
 * chunks (`chat.completion.chunk`), a whole completion (`chat.completion`)
 * and a rough token count. Pure functions, no I/O.
 */

/** What the offline model decided to do for one request. */
export type Reply =
  | { readonly kind: 'text'; readonly text: string }
  | { readonly kind: 'tool'; readonly name: string; readonly args: Readonly<Record<string, unknown>> };

/** Token counts in the wire shape. */
export interface WireUsage {
  readonly prompt_tokens: number;
  readonly completion_tokens: number;
  readonly total_tokens: number;
}

/** The model name the offline server reports. */
export const OFFLINE_MODEL = 'loopctl-offline';

/** A rough token count: one token per 4 characters, at least 1 for non-empty text. */
export function countTokens(text: string): number {
  return Math.ceil(text.length / 4);
}

/** Splits text into word chunks (each word with the whitespace after it); joined they give the text back. */
export function wordChunks(text: string): string[] {
  return text.match(/\s+|\S+\s*/g) ?? [];
}

/** Builds the chunks of one streamed answer, all sharing one id and creation time. */
export class ChunkBuilder {
  readonly #meta: { id: string; object: 'chat.completion.chunk'; created: number; model: string };
  constructor(id: string, model: string = OFFLINE_MODEL, created = Math.floor(Date.now() / 1000)) {
    this.#meta = { id, object: 'chat.completion.chunk', created, model };
  }

  #choice(delta: Record<string, unknown>, finishReason: string | null = null) {
    return { ...this.#meta, choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }] };
  }

  /** The first chunk: the assistant role, empty content. */
  role() {
    return this.#choice({ role: 'assistant', content: '' });
  }

  /** One piece of answer text. */
  text(delta: string) {
    return this.#choice({ content: delta });
  }

  /**
   * The deltas of one tool call at `index`: a header chunk with id and name
   * (empty arguments), then the JSON arguments in two pieces, as OpenAI streams them.
   */
  toolCall(index: number, callId: string, name: string, args: string) {
    const half = Math.ceil(args.length / 2);
    return [
      this.#choice({ tool_calls: [{ index, id: callId, type: 'function', function: { name, arguments: '' } }] }),
      this.#choice({ tool_calls: [{ index, function: { arguments: args.slice(0, half) } }] }),
      this.#choice({ tool_calls: [{ index, function: { arguments: args.slice(half) } }] }),
    ];
  }

  /** The chunk carrying `finish_reason` (empty delta). */
  finish(reason: 'stop' | 'tool_calls') {
    return this.#choice({}, reason);
  }

  /** The trailing usage chunk (`choices: []`), sent when `stream_options.include_usage` is set. */
  usage(usage: WireUsage) {
    return { ...this.#meta, choices: [], usage };
  }
}

/** A whole non-streamed `chat.completion` for `reply`. */
export function completion(id: string, reply: Reply, usage: WireUsage, created = Math.floor(Date.now() / 1000)) {
  const message =
    reply.kind === 'text'
      ? { role: 'assistant', content: reply.text, refusal: null }
      : {
          role: 'assistant',
          content: null,
          refusal: null,
          tool_calls: [
            {
              id: `call_${id}`,
              type: 'function',
              function: { name: reply.name, arguments: JSON.stringify(reply.args) },
            },
          ],
        };
  const finishReason = reply.kind === 'text' ? 'stop' : 'tool_calls';
  return {
    id,
    object: 'chat.completion',
    created,
    model: OFFLINE_MODEL,
    choices: [{ index: 0, message, logprobs: null, finish_reason: finishReason }],
    usage,
  };
}

/** The text the model "writes" for `reply` (for its completion token count). */
export function replyText(reply: Reply): string {
  return reply.kind === 'text' ? reply.text : reply.name + JSON.stringify(reply.args);
}
