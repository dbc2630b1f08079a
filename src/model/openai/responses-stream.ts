import { APIError } from 'openai';
import type OpenAI from 'openai';
import { ModelCallError } from '../../errors.js';
import type { ModelEvent, ModelResponse } from '../types.js';
import { responseToModelResponse, type ResponsesResponse } from './responses-items.js';
import { isObj, malformed, obj, requiredText, text, type WireCode } from './wire-shape.js';

const CHUNK: WireCode = 'malformed_chunk';

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
 * - an event of the wrong shape (an item that is not an object, a delta that
 *   is not text, …) throws a `ModelOutputError` (`malformed_chunk`) naming the
 *   field; events of unknown types are skipped.
 *
 * {@link finish} throws a retryable `ModelCallError` (`stream_truncated`) when
 * the stream ended without `response.completed` / `response.incomplete`.
 */
export class ResponsesStreamAccumulator {
  private text = '';
  private refusal = '';
  private reasoning = '';
  /** The function calls by item id, made at the first one (a text answer never needs it). */
  #calls: Map<string, PendingCall> | undefined;
  private final: ResponsesResponse | undefined;
  private events = 0;

  private get calls(): Map<string, PendingCall> {
    return (this.#calls ??= new Map());
  }

  /**
   * Reads one event. @returns the deltas it carries. @throws APIError on `error` / `response.failed`;
   * ModelOutputError (`malformed_chunk`, `field` set) for an event of the wrong shape.
   */
  push(event: ResponsesStreamEvent): ModelEvent[] {
    this.events++;
    const e: unknown = event;
    if (!isObj(e)) return malformed(CHUNK, 'event', 'an object', e);
    switch (e['type']) {
      case 'response.output_text.delta':
        return this.append('text', 'text_delta', requiredText(e['delta'], CHUNK, 'delta'));
      case 'response.refusal.delta':
        return this.append('refusal', 'refusal_delta', requiredText(e['delta'], CHUNK, 'delta'));
      case 'response.reasoning_text.delta':
      case 'response.reasoning_summary_text.delta':
        return this.append('reasoning', 'reasoning_delta', requiredText(e['delta'], CHUNK, 'delta'));
      case 'response.output_item.added':
      case 'response.output_item.done': {
        const item = obj(e['item'], CHUNK, 'item');
        if (item['type'] !== 'function_call') return [];
        const callId = requiredText(item['call_id'], CHUNK, 'item.call_id');
        const name = requiredText(item['name'], CHUNK, 'item.name');
        const itemArgs = text(item['arguments'], CHUNK, 'item.arguments');
        const key = text(item['id'], CHUNK, 'item.id') ?? callId;
        const call = this.calls.get(key);
        if (call) {
          if (e['type'] === 'response.output_item.done') {
            Object.assign(call, { callId, name, arguments: itemArgs ?? call.arguments });
          }
          return [];
        }
        const args = itemArgs ?? '';
        this.calls.set(key, { index: this.calls.size, callId, name, arguments: args });
        return [{ type: 'tool_call_delta', index: this.calls.size - 1, callId, name, argumentsDelta: args }];
      }
      case 'response.function_call_arguments.delta': {
        const call = this.callFor(requiredText(e['item_id'], CHUNK, 'item_id'));
        const delta = requiredText(e['delta'], CHUNK, 'delta');
        call.arguments += delta;
        return delta ? [{ type: 'tool_call_delta', index: call.index, argumentsDelta: delta }] : [];
      }
      case 'response.function_call_arguments.done': {
        const call = this.callFor(requiredText(e['item_id'], CHUNK, 'item_id'));
        const args = requiredText(e['arguments'], CHUNK, 'arguments');
        const rest = args.startsWith(call.arguments) ? args.slice(call.arguments.length) : '';
        call.arguments = args;
        return rest ? [{ type: 'tool_call_delta', index: call.index, argumentsDelta: rest }] : [];
      }
      case 'response.completed':
      case 'response.incomplete':
      case 'response.failed': {
        const response = obj(e['response'], CHUNK, 'response');
        if (e['type'] === 'response.failed') {
          const error = response['error'] ?? { message: 'the response failed' };
          throw new APIError(undefined, error as object, undefined, undefined);
        }
        this.final = response as unknown as ResponsesResponse;
        return [];
      }
      case 'error': {
        const payload = e['error'] ?? { code: e['code'], message: e['message'], param: e['param'] };
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
    const streamed = { text: this.text, refusal: this.refusal, reasoning: this.reasoning, toolCalls };
    return responseToModelResponse(this.final, streamed, { code: 'malformed_chunk', prefix: 'response.' });
  }

  private append(
    field: 'text' | 'refusal' | 'reasoning',
    type: 'text_delta' | 'refusal_delta' | 'reasoning_delta',
    delta: string,
  ): ModelEvent[] {
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
