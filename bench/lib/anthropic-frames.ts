/**
 * Anthropic Messages stream frames for the benchmark server (bench/server.ts), in the documented event grammar:
 * `message_start`, one text `content_block_start`, n `content_block_delta` (`text_delta`), `content_block_stop`,
 * `message_delta` (`end_turn`, usage), `message_stop`. Built with the test server's builder
 * (test/support/anthropic-server.ts) and cached per n.
 */
import { anthropicEvent } from '../../test/support/anthropic-server.js';

const WORDS = [' The', ' capital', ' of', ' the', ' United', ' Kingdom', ' is', ' London', '.', ' It'];
const cache = new Map<number, string[]>();

/** The frames of an n-chunk text stream. */
export function anthropicFrames(n: number): string[] {
  let frames = cache.get(n);
  if (frames) return frames;
  frames = [
    anthropicEvent({
      type: 'message_start',
      message: {
        id: 'msg_01XFDUDYJgAACzvnptvVoYEL',
        type: 'message',
        role: 'assistant',
        model: 'claude-bench',
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: { input_tokens: 12, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 1 },
      },
    }),
    anthropicEvent({ type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }),
  ];
  for (let i = 0; i < n; i++) {
    const text = WORDS[i % WORDS.length]!;
    frames.push(anthropicEvent({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text } }));
  }
  frames.push(
    anthropicEvent({ type: 'content_block_stop', index: 0 }),
    anthropicEvent({
      type: 'message_delta',
      delta: { stop_reason: 'end_turn', stop_sequence: null },
      usage: { output_tokens: n },
    }),
    anthropicEvent({ type: 'message_stop' }),
  );
  cache.set(n, frames);
  return frames;
}
