import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';

type Content = CallToolResult['content'][number];

/** About how many bytes a base64 string decodes to. */
function base64Bytes(data: string): number {
  const pad = data.endsWith('==') ? 2 : data.endsWith('=') ? 1 : 0;
  return Math.max(0, Math.floor((data.length * 3) / 4) - pad);
}

/**
 * One content block as text for the model: text as it is; images and audio
 * summarised as JSON without their bytes (`{"type":"image","mimeType":…,"bytes":N}`);
 * embedded resources with their text, or a summary of their blob; anything
 * else (resource links, unknown types) as JSON.
 */
export function contentText(block: Content): string {
  switch (block.type) {
    case 'text':
      return block.text;
    case 'image':
    case 'audio':
      return JSON.stringify({ type: block.type, mimeType: block.mimeType, bytes: base64Bytes(block.data) });
    case 'resource': {
      const { resource } = block;
      if ('text' in resource && typeof resource.text === 'string') return resource.text;
      const { blob, ...rest } = resource as { blob?: unknown } & Record<string, unknown>;
      return JSON.stringify({
        type: 'resource',
        ...rest,
        ...(typeof blob === 'string' ? { bytes: base64Bytes(blob) } : {}),
      });
    }
    default:
      return JSON.stringify(block);
  }
}

/**
 * The text of a `tools/call` result: the content blocks' texts joined with a
 * newline; with no content, the structured content (or a legacy
 * `toolResult`) as JSON; else the empty string.
 */
export function resultText(result: { content?: unknown; structuredContent?: unknown; toolResult?: unknown }): string {
  const content = Array.isArray(result.content) ? (result.content as Content[]) : [];
  if (content.length > 0) return content.map(contentText).join('\n');
  if (result.structuredContent !== undefined) return JSON.stringify(result.structuredContent);
  if (result.toolResult !== undefined)
    return typeof result.toolResult === 'string' ? result.toolResult : JSON.stringify(result.toolResult);
  return '';
}
