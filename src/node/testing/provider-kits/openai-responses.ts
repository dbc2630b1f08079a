/**
 * The provider kit of `openaiResponses` (the Responses API). Streams are encoded as OpenAI sends them:
 * `response.created`; for the text a message item (`output_item.added`, `content_part.added`, one
 * `output_text.delta` per piece, the `.done` events); per call a `function_call` item
 * (`output_item.added`, one `function_call_arguments.delta` per piece, `.done`, `output_item.done`);
 * then `response.completed` (or `response.incomplete` for `length`) with the whole response and usage.
 * `ScriptedAnswer.reasoning` is not encoded: the adapter sends no reasoning items back (stateless input).
 */
import { openaiResponses, type OpenAIResponsesOptions } from '../../../model/openai/responses.js';
import type { ProviderKit, ScriptedAnswer, WireKit } from '../provider-kit.js';
import { responsesInvalidVariants, responsesRequestFault } from './openai-responses-validate.js';
import { openaiError, responsesBody, sseEvent, upToFirst } from './openai-wire.js';

/** The whole Responses object of `answer`. */
function body(answer: ScriptedAnswer) {
  const whole = responsesBody({
    ...(answer.text.length > 0 ? { text: answer.text.join('') } : {}),
    calls: answer.toolCalls.map((c) => ({ callId: c.callId, name: c.name, arguments: c.argumentChunks.join('') })),
    usage: [answer.usage.inputTokens, answer.usage.outputTokens],
  });
  if (answer.finishReason !== 'length') return whole;
  return { ...whole, status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' } };
}

function frames(answer: ScriptedAnswer): string[] {
  const whole = body(answer);
  const out: string[] = [];
  let seq = 0;
  const event = (type: string, fields: Record<string, unknown>) =>
    out.push(sseEvent(type, { sequence_number: seq++, ...fields }));
  event('response.created', { response: { ...whole, status: 'in_progress', output: [], usage: null } });
  let index = 0;
  if (answer.text.length > 0) {
    const text = answer.text.join('');
    const item = { id: 'msg_1', type: 'message', role: 'assistant', status: 'in_progress', content: [] };
    const part = { type: 'output_text', text: '', annotations: [] };
    const at = { item_id: 'msg_1', output_index: index, content_index: 0 };
    event('response.output_item.added', { output_index: index, item });
    event('response.content_part.added', { ...at, part });
    for (const delta of answer.text) event('response.output_text.delta', { ...at, delta });
    event('response.output_text.done', { ...at, text });
    event('response.content_part.done', { ...at, part: { ...part, text } });
    event('response.output_item.done', { output_index: index, item: whole.output[index] });
    index++;
  }
  for (const [i, call] of answer.toolCalls.entries()) {
    const id = `fc_${i}`;
    const args = call.argumentChunks.join('');
    const item = { id, type: 'function_call', status: 'in_progress', call_id: call.callId, name: call.name };
    event('response.output_item.added', { output_index: index, item: { ...item, arguments: '' } });
    for (const delta of call.argumentChunks)
      event('response.function_call_arguments.delta', { item_id: id, output_index: index, delta });
    event('response.function_call_arguments.done', { item_id: id, output_index: index, arguments: args });
    event('response.output_item.done', {
      output_index: index,
      item: { ...item, status: 'completed', arguments: args },
    });
    index++;
  }
  event(answer.finishReason === 'length' ? 'response.incomplete' : 'response.completed', { response: whole });
  return out;
}

const firstText = (answer: ScriptedAnswer) =>
  upToFirst(frames(answer), (f) => f.startsWith('event: response.output_text.delta\n'));

/** The Responses API wire (`POST /v1/responses`) as a {@link WireKit}. */
export const openaiResponsesWire: WireKit = {
  route: (r) =>
    r.method === 'POST' && r.path === '/v1/responses'
      ? (r.body as { stream?: unknown } | undefined)?.stream === true
        ? 'stream'
        : 'json'
      : undefined,
  stream: (answer) => ({ frames: frames(answer) }),
  json: body,
  error: openaiError,
  cut: firstText,
  streamError: (answer) => [
    ...firstText(answer),
    sseEvent('error', {
      code: 'server_error',
      message: 'The server had an error processing your request.',
      param: null,
    }),
  ],
  malformed: () => ({
    frames: [
      sseEvent('response.created', { response: {} }),
      sseEvent('response.output_item.added', {
        output_index: 0,
        item: { type: 'function_call', id: 'fc_1', call_id: 42, name: 'get_weather', arguments: '' },
      }),
    ],
    field: 'item.call_id',
  }),
  validateRequest: (r) => responsesRequestFault(r.body),
  invalidVariants: responsesInvalidVariants,
};

/**
 * The kit of {@link openaiResponses} for `providerContract`: model `gpt-test`, a dummy key, `baseURL`
 * `<origin>/v1`; `options` are passed on.
 */
export function openaiResponsesKit(options: Partial<OpenAIResponsesOptions> = {}): ProviderKit {
  return {
    name: 'openaiResponses',
    provider: ({ origin }) =>
      openaiResponses({ model: 'gpt-test', apiKey: 'test-key', ...options, baseURL: `${origin}/v1` }),
    wire: openaiResponsesWire,
  };
}
