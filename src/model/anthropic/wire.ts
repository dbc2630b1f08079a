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
