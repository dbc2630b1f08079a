/**
 * The provider kit of `openaiChat` (Chat Completions): the example a kit for another provider follows
 * (docs/testing.md, "Proving a provider adapter"). Streams are encoded as OpenAI sends them: a role
 * chunk, one chunk per text delta, per tool call a chunk with its id and name then one per argument
 * piece, a chunk with `finish_reason`, a usage chunk with empty `choices` (`stream_options.include_usage`)
 * and `data: [DONE]`. `ScriptedAnswer.reasoning` is not encoded: Chat Completions has no reasoning to send
 * back.
 */
import { openaiChat, type OpenAIChatOptions } from '../../../model/openai/chat.js';
import type { ProviderKit, ScriptedAnswer, WireKit } from '../provider-kit.js';
import { chatInvalidVariants, chatRequestFault } from './openai-chat-validate.js';
import { SSE_DONE, chatChunk, chatCompletion, openaiError, sseData, toolCallDelta, wireUsage } from './openai-wire.js';

const usageOf = (answer: ScriptedAnswer) => wireUsage(answer.usage.inputTokens, answer.usage.outputTokens);

function frames(answer: ScriptedAnswer): string[] {
  return [
    sseData(chatChunk({ role: 'assistant', content: '', refusal: null })),
    ...answer.text.map((piece) => sseData(chatChunk({ content: piece }))),
    ...answer.toolCalls.flatMap((call, i) => [
      sseData(chatChunk({ tool_calls: [toolCallDelta(i, '', call.callId, call.name)] })),
      ...call.argumentChunks.map((piece) => sseData(chatChunk({ tool_calls: [toolCallDelta(i, piece)] }))),
    ]),
    sseData(chatChunk({}, { finishReason: answer.finishReason })),
    sseData(chatChunk({}, { choices: [], usage: usageOf(answer) })),
    SSE_DONE,
  ];
}

/** The role chunk and the first text chunk: the first text delta, no finish reason. */
function firstText(answer: ScriptedAnswer): string[] {
  if (answer.text.length === 0) throw new Error('openaiChatWire.cut: the answer has no text to stream first');
  return frames(answer).slice(0, 2);
}

/** The Chat Completions wire (`POST /v1/chat/completions`) as a {@link WireKit}. */
export const openaiChatWire: WireKit = {
  route: (r) =>
    r.method === 'POST' && r.path === '/v1/chat/completions'
      ? (r.body as { stream?: unknown } | undefined)?.stream === true
        ? 'stream'
        : 'json'
      : undefined,
  stream: (answer) => ({ frames: frames(answer) }),
  json: (answer) =>
    chatCompletion(
      {
        content: answer.text.length > 0 ? answer.text.join('') : null,
        ...(answer.toolCalls.length > 0
          ? {
              tool_calls: answer.toolCalls.map((c) => ({
                id: c.callId,
                name: c.name,
                arguments: c.argumentChunks.join(''),
              })),
            }
          : {}),
      },
      answer.finishReason,
      usageOf(answer),
    ),
  error: openaiError,
  cut: firstText,
  streamError: (answer) => [
    ...firstText(answer),
    sseData({ error: { message: 'The server had an error processing your request.', type: 'server_error' } }),
    SSE_DONE,
  ],
  malformed: () => ({
    frames: [sseData(chatChunk({ role: 'assistant', content: 'Hel' })), sseData(chatChunk({ tool_calls: {} }))],
    field: 'choices[0].delta.tool_calls',
  }),
  validateRequest: (r) => chatRequestFault(r.body),
  invalidVariants: chatInvalidVariants,
};

/**
 * The kit of {@link openaiChat} for `providerContract`: model `gpt-test`, a dummy key, `baseURL`
 * `<origin>/v1`; `options` are passed on (e.g. `request` fields).
 */
export function openaiChatKit(options: Partial<OpenAIChatOptions> = {}): ProviderKit {
  return {
    name: 'openaiChat',
    provider: ({ origin }) =>
      openaiChat({ model: 'gpt-test', apiKey: 'test-key', ...options, baseURL: `${origin}/v1` }),
    wire: openaiChatWire,
  };
}
