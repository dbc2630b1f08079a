import { APIError } from 'openai';
import type OpenAI from 'openai';
import { ModelCallError } from '../../errors.js';
import type { ModelEvent, ModelResponse } from '../types.js';
import { responseToModelResponse, type ResponsesResponse } from './responses-items.js';

/** A Responses API stream event (`openai` 6.x `ResponseStreamEvent`). */
export type ResponsesStreamEvent = OpenAI.Responses.ResponseStreamEvent;

interface PendingCall {
  readonly index: number;
  callId: string;
  name: string;
  arguments: string;
}

/**
 * Accumulates Responses API stream events into {@link ModelEvent}s and one
 * final {@link ModelResponse}.
 *
 * - `response.output_text.delta` → `text_delta`; `response.refusal.delta` →
 *   `refusal_delta`; `response.reasoning_text.delta` and
 *   `response.reasoning_summary_text.delta` → `reasoning_delta`.
 * - function calls: `response.output_item.added` opens a call (index = its
 *   order among the response's function calls) and emits `tool_call_delta`
 *   with `callId` and `name`; `response.function_call_arguments.delta` emits
 *   argument deltas; `.done` emits whatever the deltas had not carried (LM
 *   Studio sends only `.done`); `output_item.done` fixes the final values.
 * - `response.completed` / `response.incomplete` give the final response
 *   (its `output` wins; streamed values fill what it lacks).
 * - `error` and `response.failed` throw an `APIError` without status (the
 *   in-stream rule of `toModelCallError`).
 *
 * {@link finish} throws a retryable `ModelCallError` (`stream_truncated`) when
 * the stream ended without `response.completed` / `response.incomplete`.
 */
export class ResponsesStreamAccumulator {
  private text = '';
  private refusal = '';
  private reasoning = '';
  private readonly calls = new Map<string, PendingCall>();
  private final: ResponsesResponse | undefined;
  private events = 0;

  /** Reads one event. @returns the deltas it carries. @throws APIError on `error` / `response.failed`. */
  push(event: ResponsesStreamEvent): ModelEvent[] {
    this.events++;
    switch (event.type) {
      case 'response.output_text.delta':
        return this.append('text', 'text_delta', event.delta);
      case 'response.refusal.delta':
        return this.append('refusal', 'refusal_delta', event.delta);
      case 'response.reasoning_text.delta':
      case 'response.reasoning_summary_text.delta':
        return this.append('reasoning', 'reasoning_delta', event.delta);
      case 'response.output_item.added':
      case 'response.output_item.done': {
        const item = event.item;
        if (item.type !== 'function_call') return [];
        const key = item.id ?? item.call_id;
        const call = this.calls.get(key);
        if (call) {
          if (event.type === 'response.output_item.done') Object.assign(call, { callId: item.call_id, name: item.name, arguments: item.arguments ?? call.arguments });
          return [];
        }
        const args = item.arguments ?? '';
        this.calls.set(key, { index: this.calls.size, callId: item.call_id, name: item.name, arguments: args });
        return [{ type: 'tool_call_delta', index: this.calls.size - 1, callId: item.call_id, name: item.name, argumentsDelta: args }];
      }
      case 'response.function_call_arguments.delta': {
        const call = this.callFor(event.item_id);
        call.arguments += event.delta;
        return event.delta ? [{ type: 'tool_call_delta', index: call.index, argumentsDelta: event.delta }] : [];
      }
      case 'response.function_call_arguments.done': {
        const call = this.callFor(event.item_id);
        const rest = event.arguments.startsWith(call.arguments) ? event.arguments.slice(call.arguments.length) : '';
        call.arguments = event.arguments;
        return rest ? [{ type: 'tool_call_delta', index: call.index, argumentsDelta: rest }] : [];
      }
      case 'response.completed':
      case 'response.incomplete':
      case 'response.failed':
        if (event.type === 'response.failed') {
          throw new APIError(undefined, (event.response.error ?? { message: 'the response failed' }) as object, undefined, undefined);
        }
        this.final = event.response;
        return [];
      case 'error': {
        const loose = event as unknown as { code?: unknown; message?: unknown; param?: unknown; error?: unknown };
        const payload = loose.error ?? { code: loose.code, message: loose.message, param: loose.param };
        throw new APIError(undefined, payload as object, undefined, undefined);
      }
      default:
        return [];
    }
  }

  /** Ends the stream. @returns the response. @throws ModelCallError when it never completed. */
  finish(): ModelResponse {
    if (!this.final) {
      throw new ModelCallError('the stream ended before response.completed', {
        retryable: true,
        code: 'stream_truncated',
        streamStarted: this.events > 0,
      });
    }
    const toolCalls = [...this.calls.values()].map((c) => ({ callId: c.callId, name: c.name, arguments: c.arguments }));
    return responseToModelResponse(this.final, { text: this.text, refusal: this.refusal, reasoning: this.reasoning, toolCalls });
  }

  private append(field: 'text' | 'refusal' | 'reasoning', type: 'text_delta' | 'refusal_delta' | 'reasoning_delta', delta: string): ModelEvent[] {
    if (!delta) return [];
    this[field] += delta;
    return [{ type, delta }];
  }

  private callFor(itemId: string): PendingCall {
    let call = this.calls.get(itemId);
    if (!call) this.calls.set(itemId, (call = { index: this.calls.size, callId: itemId, name: '', arguments: '' }));
    return call;
  }
}
