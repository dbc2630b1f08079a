/**
 * The wire kit of Gemini's `streamGenerateContent?alt=sse` / `generateContent` for `providerContract`
 * (docs/testing.md, "Proving a provider adapter"). Streams are encoded as Gemini sends them: one `data:` event per
 * chunk with `\r\n\r\n` between events, each a `GenerateContentResponse` with candidate 0's parts: one thought part
 * per reasoning piece (`thought: true`), one text part per text piece, then every function call of the answer whole in
 * one chunk (with its `id`; the first signed with {@link kitSignature} of its id and the thought text), and a last
 * chunk with `finishReason` (`STOP`, or `MAX_TOKENS` for `length`) and `usageMetadata`. No SDK is loaded here: the kit
 * of loopctl's own adapter (`gemini()` of `loopctl/gemini`) is `{ name, provider, wire: geminiWire }`.
 */
import type { ScriptedAnswer, WireKit } from '../provider-kit.js';
import { geminiInvalidVariants, geminiRequestFault, kitSignature } from './gemini-validate.js';

const PATH = /^\/v1beta\/models\/[^/:?]+:(streamGenerateContent|generateContent)(\?|$)/;
const frame = (payload: unknown): string => `data: ${JSON.stringify(payload)}\r\n\r\n`;
const FINISH = { stop: 'STOP', tool_calls: 'STOP', length: 'MAX_TOKENS' } as const;
const RPC_STATUS: Record<number, string> = {
  400: 'INVALID_ARGUMENT',
  401: 'UNAUTHENTICATED',
  403: 'PERMISSION_DENIED',
  404: 'NOT_FOUND',
  429: 'RESOURCE_EXHAUSTED',
  500: 'INTERNAL',
  503: 'UNAVAILABLE',
  504: 'DEADLINE_EXCEEDED',
};

const usageOf = (answer: ScriptedAnswer) => ({
  promptTokenCount: answer.usage.inputTokens,
  candidatesTokenCount: answer.usage.outputTokens,
  totalTokenCount: answer.usage.inputTokens + answer.usage.outputTokens,
});

const chunk = (parts: readonly unknown[], extra: Record<string, unknown> = {}) => ({
  candidates: [{ content: { parts, role: 'model' }, index: 0, ...extra }],
  modelVersion: 'gemini-kit',
  responseId: 'kit-response',
});

function callParts(answer: ScriptedAnswer): unknown[] {
  const thoughts = (answer.reasoning ?? []).join('');
  return answer.toolCalls.map((call, i) => ({
    functionCall: { id: call.callId, name: call.name, args: JSON.parse(call.argumentChunks.join('')) as unknown },
    ...(i === 0 ? { thoughtSignature: kitSignature(call.callId, thoughts) } : {}),
  }));
}

function frames(answer: ScriptedAnswer): string[] {
  const out = [
    ...(answer.reasoning ?? []).map((text) => frame(chunk([{ text, thought: true }]))),
    ...answer.text.map((text) => frame(chunk([{ text }]))),
  ];
  if (answer.toolCalls.length > 0) out.push(frame(chunk(callParts(answer))));
  const last = chunk([{ text: '' }], { finishReason: FINISH[answer.finishReason] });
  out.push(frame({ ...last, usageMetadata: usageOf(answer) }));
  return out;
}

/** The frames up to and including the first text piece (reasoning before it): no finish reason. */
function firstText(answer: ScriptedAnswer): string[] {
  if (answer.text.length === 0) throw new Error('geminiWire.cut: the answer has no text to stream first');
  return frames(answer).slice(0, (answer.reasoning ?? []).length + 1);
}

/** Gemini's REST wire (`POST /v1beta/models/{model}:streamGenerateContent?alt=sse` and `:generateContent`). */
export const geminiWire: WireKit = {
  route(r) {
    const match = r.method === 'POST' ? PATH.exec(r.path) : null;
    if (!match) return undefined;
    if (match[1] === 'generateContent') return 'json';
    return /[?&]alt=sse(&|$)/.test(r.path) ? 'stream' : undefined;
  },
  stream: (answer) => ({ frames: frames(answer) }),
  json: (answer) => {
    const thoughts = (answer.reasoning ?? []).join('');
    const text = answer.text.join('');
    const parts = [
      ...(thoughts ? [{ text: thoughts, thought: true }] : []),
      ...(text ? [{ text }] : []),
      ...callParts(answer),
    ];
    return {
      ...chunk(parts.length > 0 ? parts : [{ text: '' }], { finishReason: FINISH[answer.finishReason] }),
      usageMetadata: usageOf(answer),
    };
  },
  error: (spec) => {
    const status = RPC_STATUS[spec.status] ?? (spec.status >= 500 ? 'UNAVAILABLE' : 'FAILED_PRECONDITION');
    const details =
      spec.retryAfterMs === undefined
        ? []
        : [
            {
              '@type': 'type.googleapis.com/google.rpc.RetryInfo',
              retryDelay: `${Math.ceil(spec.retryAfterMs / 1000)}s`,
            },
          ];
    const error = { code: spec.status, message: spec.message, status, ...(details.length > 0 ? { details } : {}) };
    return { status: spec.status, headers: { 'content-type': 'application/json; charset=UTF-8' }, body: { error } };
  },
  cut: firstText,
  streamError: (answer) => [
    ...firstText(answer),
    frame({ error: { code: 503, message: 'The model is overloaded. Please try again later.', status: 'UNAVAILABLE' } }),
  ],
  malformed: () => ({
    frames: [frame(chunk([{ text: 'Hel' }])), frame({ candidates: [{ content: { parts: {} }, index: 0 }] })],
    field: 'candidates[0].content.parts',
  }),
  validateRequest: (r) => geminiRequestFault(r.body),
  invalidVariants: geminiInvalidVariants,
};
