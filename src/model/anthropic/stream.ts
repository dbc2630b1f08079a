import { ModelCallError } from '../../errors.js';
import type { TokenCounts } from '../../items.js';
import type { ModelEvent, ModelResponse } from '../types.js';
import { isObj, malformed, obj, requiredText, text, type WireCode } from '../openai/wire-shape.js';
import { parseInput } from './history.js';
import { assembleResponse, mapAnthropicUsage, readBlock } from './response.js';
import type { WireBlock } from './wire.js';

const EVENT: WireCode = 'malformed_chunk';

interface Open {
  block: Record<string, unknown> & { type: string };
  /** For a `tool_use`: its ordinal among the calls (the `tool_call_delta` index) and its streamed input text. */
  call?: { index: number; json: string };
}

/**
 * Reads the Messages API event stream (`message_start`, `content_block_start` / `_delta` / `_stop`, `message_delta`,
 * `message_stop`; the SDK drops `ping` and throws an `error` event as an `APIError`) into {@link ModelEvent}s and one
 * final {@link ModelResponse}.
 *
 * - `text_delta` → `text_delta`; `thinking_delta` → `reasoning_delta`; `signature_delta` completes a thinking block's
 *   `signature`; a `tool_use` block emits `tool_call_delta` (`index`: its ordinal among the response's calls) with
 *   `callId` and `name` at its start, then one per `input_json_delta` with `partial_json` as `argumentsDelta`;
 * - usage: `message_start.message.usage`, overlaid by each `message_delta.usage` (cumulative counts);
 * - the blocks, assembled in `index` order, become the response (`assembleResponse`: thinking and redacted thinking
 *   kept in `providerParts` with their signatures).
 *
 * Event types it does not know are skipped (the API may add some). `push` throws a `ModelOutputError`
 * (`malformed_chunk`, naming the field) for an event of the wrong shape, a delta for a block never started, or a
 * block that is not one. {@link finish} throws a retryable `ModelCallError`
 * (`stream_truncated`) when no `message_delta` with a `stop_reason` arrived; once one has, the stream is
 * {@link complete} and a connection lost before `message_stop` loses nothing.
 */
export class AnthropicStreamAccumulator {
  private readonly blocks = new Map<number, Open>();
  private calls = 0;
  private started = false;
  private stopReason: string | undefined;
  private usage: Record<string, unknown> = {};
  private events = 0;

  /** Reads one event. @returns the deltas it carries. @throws ModelOutputError (`malformed_chunk`, `field` set). */
  push(event: unknown): ModelEvent[] {
    this.events++;
    const e = obj(event, EVENT, 'event');
    const type = requiredText(e['type'], EVENT, 'event.type');
    switch (type) {
      case 'message_start': {
        const message = obj(e['message'], EVENT, 'message_start.message');
        this.started = true;
        this.overlayUsage(message['usage'], 'message_start.message.usage');
        return [];
      }
      case 'content_block_start':
        return this.start(e);
      case 'content_block_delta':
        return this.delta(e);
      case 'content_block_stop': {
        this.open(e, 'content_block_stop'); // a stop for a block never started is malformed
        return [];
      }
      case 'message_delta': {
        const delta = obj(e['delta'], EVENT, 'message_delta.delta');
        const reason = text(delta['stop_reason'], EVENT, 'message_delta.delta.stop_reason');
        if (reason !== undefined) this.stopReason = reason;
        this.overlayUsage(e['usage'], 'message_delta.usage');
        return [];
      }
      default:
        return []; // message_stop, ping, and types added later
    }
  }

  /** True once a `stop_reason` arrived: the answer is whole. */
  complete(): boolean {
    return this.stopReason !== undefined;
  }

  /** @returns the response. @throws ModelCallError `stream_truncated` (retryable) before a `stop_reason`. */
  finish(): ModelResponse {
    if (!this.started || this.stopReason === undefined) {
      const what = this.started ? 'before its stop_reason' : 'before message_start';
      throw new ModelCallError(`the stream ended ${what}`, {
        retryable: true,
        code: 'stream_truncated',
        streamStarted: this.events > 0,
      });
    }
    const ordered = [...this.blocks.entries()].sort(([a], [b]) => a - b);
    const args = new Map<WireBlock, string>();
    const content = ordered.map(([, open]) => {
      const block = { ...open.block } as WireBlock & Record<string, unknown>;
      if (open.call) {
        // Arguments stay the raw text (the engine refuses a call whose text is not JSON); the stored block gets the
        // object the API would have sent.
        const json = open.call.json.trim() === '' ? '{}' : open.call.json;
        block['input'] = parseInput(json);
        args.set(block, json);
      } else if (typeof block['_partial'] === 'string') {
        block['input'] = parseInput(block['_partial']);
        delete block['_partial'];
      }
      return block;
    });
    return assembleResponse(content, this.stopReason, this.counts(), args);
  }

  private start(e: Record<string, unknown>): ModelEvent[] {
    const index = this.index(e, 'content_block_start');
    const block = readBlock(e['content_block'], EVENT, 'content_block_start.content_block') as Open['block'];
    const open: Open = { block: { ...block } };
    this.blocks.set(index, open);
    if (block.type !== 'tool_use') {
      if (block.type === 'text' && block['text']) return [{ type: 'text_delta', delta: block['text'] as string }];
      if (block.type === 'thinking' && block['thinking']) {
        return [{ type: 'reasoning_delta', delta: block['thinking'] as string }];
      }
      return [];
    }
    open.call = { index: this.calls++, json: '' };
    const input = block['input'];
    const whole = isObj(input) && Object.keys(input).length > 0 ? JSON.stringify(input) : '';
    open.call.json = whole;
    const id = block['id'] as string;
    const name = block['name'] as string;
    return [{ type: 'tool_call_delta', index: open.call.index, callId: id, name, argumentsDelta: whole }];
  }

  private delta(e: Record<string, unknown>): ModelEvent[] {
    const open = this.open(e, 'content_block_delta');
    const delta = obj(e['delta'], EVENT, 'content_block_delta.delta');
    const kind = requiredText(delta['type'], EVENT, 'content_block_delta.delta.type');
    const block = open.block;
    switch (kind) {
      case 'text_delta': {
        const piece = requiredText(delta['text'], EVENT, 'content_block_delta.delta.text');
        block['text'] = `${(block['text'] as string | undefined) ?? ''}${piece}`;
        return piece ? [{ type: 'text_delta', delta: piece }] : [];
      }
      case 'thinking_delta': {
        const piece = requiredText(delta['thinking'], EVENT, 'content_block_delta.delta.thinking');
        block['thinking'] = `${(block['thinking'] as string | undefined) ?? ''}${piece}`;
        return piece ? [{ type: 'reasoning_delta', delta: piece }] : [];
      }
      case 'signature_delta': {
        const piece = requiredText(delta['signature'], EVENT, 'content_block_delta.delta.signature');
        block['signature'] = `${(block['signature'] as string | undefined) ?? ''}${piece}`;
        return [];
      }
      case 'input_json_delta': {
        const piece = requiredText(delta['partial_json'], EVENT, 'content_block_delta.delta.partial_json');
        if (!open.call) {
          // A server tool's input (server_tool_use) streams too: kept as text, parsed into the stored block.
          block['_partial'] = `${(block['_partial'] as string | undefined) ?? ''}${piece}`;
          return [];
        }
        open.call.json += piece;
        return piece ? [{ type: 'tool_call_delta', index: open.call.index, argumentsDelta: piece }] : [];
      }
      default:
        return []; // citations_delta and kinds added later
    }
  }

  private index(e: Record<string, unknown>, event: string): number {
    const index = e['index'];
    if (typeof index !== 'number' || !Number.isInteger(index) || index < 0) {
      return malformed(EVENT, `${event}.index`, 'a whole number', index);
    }
    return index;
  }

  private open(e: Record<string, unknown>, event: string): Open {
    const index = this.index(e, event);
    const open = this.blocks.get(index);
    if (!open) return malformed(EVENT, `${event}.index`, 'the index of a started content block', index);
    return open;
  }

  private overlayUsage(value: unknown, field: string): void {
    if (value === undefined || value === null) return;
    const usage = obj(value, EVENT, field);
    for (const [key, count] of Object.entries(usage)) if (typeof count === 'number') this.usage[key] = count;
  }

  private counts(): TokenCounts | undefined {
    return mapAnthropicUsage(this.usage);
  }
}
