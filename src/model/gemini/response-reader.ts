import { ModelCallError } from '../../errors.js';
import type { TokenCounts, ToolCall } from '../../items.js';
import { buildResponse } from '../openai/chat-stream.js';
import { isObj, list, malformed, obj, text, type WireCode } from '../openai/wire-shape.js';
import type { ModelEvent, ModelResponse } from '../types.js';
import { mapGeminiFinishReason } from './finish-reason.js';
import { toProviderParts, type GeminiPart } from './parts.js';
import { mapGeminiUsage } from './usage.js';

let generated = 0;

/** A call id for a `functionCall` that came without one: `gemini-<responseId or a random word>-<n>`, unique. */
function generatedCallId(responseId: string | undefined, index: number): string {
  const base = responseId ?? `${Date.now().toString(36)}${(generated++).toString(36)}`;
  return `gemini-${base}-${index}`;
}

/**
 * Reads `GenerateContentResponse`s (each streamed chunk, or the one body of a non-streamed call) into
 * {@link ModelEvent}s and one {@link ModelResponse}. Only candidate 0 is read.
 *
 * - a `text` part → `text_delta`, or `reasoning_delta` when `thought: true` (empty text emits nothing);
 * - a `functionCall` part → one `tool_call_delta` with the whole call (`argumentsDelta`: `args` as JSON text); its
 *   `callId` is the call's `id` when Gemini sent one, else a generated id unique to this response
 *   (`gemini-<responseId>-<n>`), which the next request never sends (the `functionResponse` pairs by turn and name);
 * - the parts are kept for `providerParts` ({@link toProviderParts}): consecutive text parts of the same kind are
 *   joined until a part with a `thoughtSignature` (which stays on the part it came with and closes it); every other
 *   part is kept as it came;
 * - `finishReason` mapped by {@link mapGeminiFinishReason}; `promptFeedback.blockReason` (a blocked prompt, no
 *   candidate) → `content_filter` with `refusal` saying why; usage: the last `usageMetadata` ({@link mapGeminiUsage}).
 *
 * `push` throws a `ModelOutputError` naming the field for a chunk of the wrong shape. {@link finish} throws a
 * retryable `ModelCallError` (`stream_truncated`) when neither a `finishReason` nor a block reason arrived; once one
 * has, the answer is {@link complete}.
 */
export class GeminiResponseReader {
  private readonly parts: GeminiPart[] = [];
  private readonly calls: ToolCall[] = [];
  private text = '';
  private reasoning = '';
  private finishReason: string | undefined;
  private blockReason: string | undefined;
  private usage: TokenCounts | undefined;
  private responseId: string | undefined;
  private chunks = 0;

  constructor(private readonly code: WireCode) {}

  /** Reads one response. @returns its deltas, in wire order. @throws ModelOutputError naming the field. */
  push(chunk: unknown): ModelEvent[] {
    const code = this.code;
    this.chunks++;
    const body = obj(chunk, code, code === 'malformed_chunk' ? 'chunk' : 'response');
    this.responseId ??= text(body['responseId'], code, 'responseId');
    const usage = mapGeminiUsage(body['usageMetadata'], code);
    if (usage) this.usage = usage;
    const feedback = body['promptFeedback'];
    if (feedback !== undefined && feedback !== null) {
      const block = text(obj(feedback, code, 'promptFeedback')['blockReason'], code, 'promptFeedback.blockReason');
      if (block && block !== 'BLOCK_REASON_UNSPECIFIED') this.blockReason = block;
    }
    const candidate = list(body['candidates'], code, 'candidates')[0];
    if (candidate === undefined) return [];
    const c = obj(candidate, code, 'candidates[0]');
    const events: ModelEvent[] = [];
    const content = c['content'];
    if (content !== undefined && content !== null) {
      const parts = list(obj(content, code, 'candidates[0].content')['parts'], code, 'candidates[0].content.parts');
      parts.forEach((part, k) => this.part(part, `candidates[0].content.parts[${k}]`, events));
    }
    const finish = text(c['finishReason'], code, 'candidates[0].finishReason');
    if (finish) this.finishReason = finish;
    return events;
  }

  /** True once a `finishReason` (or a prompt block) arrived: the answer is whole. */
  complete(): boolean {
    return this.finishReason !== undefined || this.blockReason !== undefined;
  }

  /** Ends the answer. @returns the response. @throws ModelCallError `stream_truncated` when it is not complete. */
  finish(): ModelResponse {
    if (this.blockReason !== undefined && this.finishReason === undefined) {
      return buildResponse('', [], 'content_filter', this.usage, `the prompt was blocked (${this.blockReason})`, '');
    }
    if (this.finishReason === undefined) {
      throw new ModelCallError('the stream ended before a finishReason arrived', {
        retryable: true,
        code: 'stream_truncated',
        streamStarted: this.chunks > 0,
      });
    }
    const reason = mapGeminiFinishReason(this.finishReason, this.calls.length > 0);
    const response = buildResponse(this.text, this.calls, reason, this.usage, '', this.reasoning);
    return this.parts.length > 0 ? { ...response, providerParts: toProviderParts(this.parts) } : response;
  }

  private part(value: unknown, field: string, events: ModelEvent[]): void {
    const code = this.code;
    const part = obj(value, code, field);
    const signature = text(part['thoughtSignature'], code, `${field}.thoughtSignature`);
    const call = part['functionCall'];
    if (call !== undefined && call !== null) {
      const fc = obj(call, code, `${field}.functionCall`);
      const name = text(fc['name'], code, `${field}.functionCall.name`);
      if (!name) return malformed(code, `${field}.functionCall.name`, 'a non-empty string', fc['name']);
      const args = fc['args'] ?? {};
      if (!isObj(args)) return malformed(code, `${field}.functionCall.args`, 'an object', args);
      const id = text(fc['id'], code, `${field}.functionCall.id`) || undefined;
      const index = this.calls.length;
      const callId = id ?? generatedCallId(this.responseId, index);
      const argumentsText = JSON.stringify(args);
      this.calls.push({ callId, name, arguments: argumentsText });
      this.parts.push(part as GeminiPart);
      events.push({ type: 'tool_call_delta', index, callId, name, argumentsDelta: argumentsText });
      return;
    }
    const chunk = text(part['text'], code, `${field}.text`);
    if (chunk === undefined) {
      this.parts.push(part as GeminiPart); // a part loopctl does not read (code, data…): kept for the replay
      return;
    }
    const thought = part['thought'] === true;
    if (chunk) {
      if (thought) this.reasoning += chunk;
      else this.text += chunk;
      events.push({ type: thought ? 'reasoning_delta' : 'text_delta', delta: chunk });
    }
    this.joinText(part as GeminiPart, chunk, thought, signature);
  }

  private joinText(part: GeminiPart, chunk: string, thought: boolean, signature: string | undefined): void {
    const last = this.parts.at(-1);
    const onlyText = Object.keys(part).every((k) => k === 'text' || k === 'thought' || k === 'thoughtSignature');
    const open =
      last !== undefined &&
      onlyText &&
      typeof last['text'] === 'string' &&
      (last['thought'] === true) === thought &&
      last['thoughtSignature'] === undefined &&
      Object.keys(last).every((k) => k === 'text' || k === 'thought');
    if (!open) {
      this.parts.push(part);
      return;
    }
    this.parts[this.parts.length - 1] = {
      ...last,
      text: `${last['text'] as string}${chunk}`,
      ...(signature !== undefined ? { thoughtSignature: signature } : {}),
    };
  }
}
