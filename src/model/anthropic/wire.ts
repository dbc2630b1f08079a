import type Anthropic from '@anthropic-ai/sdk';

/** A Messages API request message (`@anthropic-ai/sdk` 1.x `MessageParam`). */
export type AnthropicMessage = Anthropic.Messages.MessageParam;
/** One content block of a request message. */
export type AnthropicBlockParam = Anthropic.Messages.ContentBlockParam;
/** A tool definition of a request. */
export type AnthropicTool = Anthropic.Messages.Tool;
/** A system prompt block. */
export type AnthropicSystemBlock = Anthropic.Messages.TextBlockParam;
/** One streamed event (`message_start`, `content_block_*`, `message_delta`, `message_stop`). */
export type AnthropicStreamEvent = Anthropic.Messages.RawMessageStreamEvent;
/** A complete (non-streamed) Message. */
export type AnthropicMessageBody = Anthropic.Messages.Message;

/** The family tag of the `providerParts` this adapter writes and replays. */
export const ANTHROPIC_FAMILY = 'anthropic';

/**
 * What `anthropicMessages` keeps in an assistant Item's `providerParts.data` (`family: 'anthropic'`): the
 * response's `content` blocks exactly as the API sent them, in order (`thinking` with its `signature`,
 * `redacted_thinking` with its `data`, `text`, `tool_use` with its parsed `input`, server tool blocks). Written only
 * when the content holds a block other than `text` and `tool_use` (otherwise the Item's text and calls say it all).
 */
export interface AnthropicParts {
  readonly content: readonly WireBlock[];
}

/** A content block as read from the wire: its `type` and the rest of its fields, kept as JSON. */
export type WireBlock = { readonly type: string } & { readonly [key: string]: unknown };

const nonEmpty = (value: unknown): boolean => typeof value === 'string' && value !== '';

/**
 * Why the Messages API would refuse `block` replayed as a content block of an assistant message, or undefined: it
 * must be a JSON object with a string `type`; `text` needs a non-empty `text`; `thinking` a string `thinking` and a
 * non-empty `signature`; `redacted_thinking` a non-empty `data`. `tool_use` blocks are rebuilt from the Item's calls
 * and other block types (server tools) are the API's own, so neither is checked further.
 */
export function wireBlockFault(block: unknown): string | undefined {
  if (typeof block !== 'object' || block === null || Array.isArray(block)) return 'a block must be a JSON object';
  const fields = block as Record<string, unknown>;
  switch (fields['type']) {
    case 'text':
      return nonEmpty(fields['text']) ? undefined : 'text: text content blocks must be non-empty';
    case 'thinking':
      if (typeof fields['thinking'] !== 'string') return 'thinking: must be a string';
      return nonEmpty(fields['signature']) ? undefined : 'signature: must be a non-empty string';
    case 'redacted_thinking':
      return nonEmpty(fields['data']) ? undefined : 'data: must be a non-empty string';
    default:
      return typeof fields['type'] === 'string' ? undefined : 'type: must be a string';
  }
}
