/**
 * The wire kit of Anthropic's Messages API (`POST /v1/messages`) for `providerContract` (docs/testing.md, "Proving a
 * provider adapter"). Streams follow the documented event grammar: `message_start` (input tokens), `ping`, then per
 * content block its `content_block_start`, deltas and `content_block_stop` (a `thinking` block for the answer's
 * reasoning, one `thinking_delta` per piece then a `signature_delta` with {@link anthropicKitSignature}; a `text`
 * block, one `text_delta` per piece; per tool call a `tool_use` block, one `input_json_delta` per argument piece),
 * `message_delta` (`stop_reason`, output tokens) and `message_stop`. Errors are `{ type: 'error', error: { type,
 * message } }` with `retry-after` in seconds (429 `rate_limit_error`, 529 `overloaded_error`, …). No SDK is loaded
 * here: the kit of loopctl's own adapter (`anthropicMessages()` of `loopctl/anthropic`, with thinking enabled) is
 * `{ name, provider, wire: anthropicWire }`.
 */
import type { ScriptedAnswer, WireKit } from '../provider-kit.js';
import {
  anthropicInvalidVariants,
  anthropicKitSignature,
  anthropicMessagesFault,
  kitThinkingLedger,
} from './anthropic-validate.js';
import { isRecord } from './openai-wire.js';

const PATH = /^\/v1\/messages(\?|$)/;
const STOP = { stop: 'end_turn', tool_calls: 'tool_use', length: 'max_tokens' } as const;
const ERROR_TYPE: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  403: 'permission_error',
  404: 'not_found_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
  500: 'api_error',
  529: 'overloaded_error',
};

type Event = { type: string } & Record<string, unknown>;
const frame = (event: Event): string => `event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`;

const signatureOf = (answer: ScriptedAnswer): string =>
  anthropicKitSignature(
    (answer.reasoning ?? []).join(''),
    answer.toolCalls.map((c) => c.callId),
  );

/** The content blocks of the finished message, in order (an empty text is no block: the API refuses one back). */
function contentOf(answer: ScriptedAnswer): Record<string, unknown>[] {
  const thinking = (answer.reasoning ?? []).join('');
  const text = answer.text.join('');
  return [
    ...(answer.reasoning?.length ? [{ type: 'thinking', thinking, signature: signatureOf(answer) }] : []),
    ...(text ? [{ type: 'text', text }] : []),
    ...answer.toolCalls.map((c) => ({
      type: 'tool_use',
      id: c.callId,
      name: c.name,
      input: JSON.parse(c.argumentChunks.join('')) as unknown,
    })),
  ];
}

/** Each block's events; `firstText` is the index (in the whole stream) of the first `text_delta`. */
function blockEvents(answer: ScriptedAnswer): Event[][] {
  const blocks: Event[][] = [];
  const block = (start: Record<string, unknown>, deltas: Record<string, unknown>[]) => {
    const index = blocks.length;
    blocks.push([
      { type: 'content_block_start', index, content_block: start },
      ...deltas.map((delta) => ({ type: 'content_block_delta', index, delta })),
      { type: 'content_block_stop', index },
    ]);
  };
  if (answer.reasoning?.length) {
    block({ type: 'thinking', thinking: '', signature: '' }, [
      ...answer.reasoning.map((thinking) => ({ type: 'thinking_delta', thinking })),
      { type: 'signature_delta', signature: signatureOf(answer) },
    ]);
  }
  if (answer.text.join('')) {
    block(
      { type: 'text', text: '' },
      answer.text.map((text) => ({ type: 'text_delta', text })),
    );
  }
  for (const call of answer.toolCalls) {
    block(
      { type: 'tool_use', id: call.callId, name: call.name, input: {} },
      call.argumentChunks.map((partial_json) => ({ type: 'input_json_delta', partial_json })),
    );
  }
  return blocks;
}

const messageStart = (answer: ScriptedAnswer): Event => ({
  type: 'message_start',
  message: {
    id: 'msg_kit',
    type: 'message',
    role: 'assistant',
    model: 'claude-kit',
    content: [],
    stop_reason: null,
    stop_sequence: null,
    usage: { input_tokens: answer.usage.inputTokens, output_tokens: 1 },
  },
});

function events(answer: ScriptedAnswer): Event[] {
  return [
    messageStart(answer),
    { type: 'ping' },
    ...blockEvents(answer).flat(),
    {
      type: 'message_delta',
      delta: { stop_reason: STOP[answer.finishReason], stop_sequence: null },
      usage: { output_tokens: answer.usage.outputTokens },
    },
    { type: 'message_stop' },
  ];
}

/** The frames up to and including the first `text_delta` (the thinking block before it): no stop reason. */
function firstText(answer: ScriptedAnswer): string[] {
  const all = events(answer);
  const at = all.findIndex((e) => e.type === 'content_block_delta' && (e['delta'] as Event).type === 'text_delta');
  if (at === -1) throw new Error('anthropicWire.cut: the answer has no text to stream first');
  return all.slice(0, at + 1).map(frame);
}

/** Anthropic's Messages API wire (`POST /v1/messages`, streamed when the body says `stream: true`). */
export const anthropicWire: WireKit = {
  route(r) {
    if (r.method !== 'POST' || !PATH.test(r.path)) return undefined;
    return isRecord(r.body) && r.body['stream'] === true ? 'stream' : 'json';
  },
  stream: (answer) => ({ headers: { 'request-id': 'req_kit' }, frames: events(answer).map(frame) }),
  json: (answer) => ({
    id: 'msg_kit',
    type: 'message',
    role: 'assistant',
    model: 'claude-kit',
    content: contentOf(answer),
    stop_reason: STOP[answer.finishReason],
    stop_sequence: null,
    usage: { input_tokens: answer.usage.inputTokens, output_tokens: answer.usage.outputTokens },
  }),
  error: (spec) => {
    const type = ERROR_TYPE[spec.status] ?? (spec.status >= 500 ? 'api_error' : 'invalid_request_error');
    const retry: Record<string, string> =
      spec.retryAfterMs === undefined ? {} : { 'retry-after': String(Math.ceil(spec.retryAfterMs / 1000)) };
    return {
      status: spec.status,
      headers: { 'content-type': 'application/json', 'request-id': 'req_kit_error', ...retry },
      body: { type: 'error', error: { type, message: spec.message } },
    };
  },
  cut: firstText,
  streamError: (answer) => [
    ...firstText(answer),
    frame({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }),
  ],
  malformed: () => ({
    frames: [
      frame(
        messageStart({ text: [], toolCalls: [], finishReason: 'stop', usage: { inputTokens: 5, outputTokens: 1 } }),
      ),
      frame({ type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }),
      frame({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Hel' } }),
      frame({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 42 } }),
    ],
    field: 'content_block_delta.delta.text',
  }),
  validateRequest: (r) => {
    if (!r.headers['anthropic-version']) return 'anthropic-version: header is required';
    return anthropicMessagesFault(r.body, kitThinkingLedger);
  },
  invalidVariants: anthropicInvalidVariants,
};
