import type { AssistantItem, Item } from '../../items.js';
import { summaryMessage } from '../../engine/compaction/apply.js';
import type { ToolSpec } from '../types.js';
import { isCallPart, replayableParts, type GeminiPart } from './parts.js';

/** One Gemini `Content`: a `user` or `model` turn and its parts. */
export interface GeminiContent {
  readonly role: 'user' | 'model';
  readonly parts: readonly GeminiPart[];
}

/** A Gemini function declaration: the tool's JSON Schema goes in `parametersJsonSchema` as it is. */
export interface GeminiFunctionDeclaration {
  readonly name: string;
  readonly description: string;
  readonly parametersJsonSchema: unknown;
}

/** Options of {@link toGeminiContents}. */
export interface ContentsOptions {
  /**
   * The `thoughtSignature` put on the first `functionCall` part of a model turn Gemini did not write (an Item of
   * another family, or one without parts), or `false` for none. Default {@link SKIP_THOUGHT_SIGNATURE}.
   */
  readonly unsignedCallSignature: string | false;
}

/**
 * Converts a provider-neutral history into Gemini `contents`. Pure; never throws.
 *
 * - `user` → `{ role: 'user', parts: [{ text }] }`;
 * - `assistant` made by Gemini (its `providerParts` are the `gemini` family's and match its calls) →
 *   `{ role: 'model', parts }` with the stored parts unchanged: thought parts, text, `functionCall`s and every
 *   `thoughtSignature` exactly as the API sent them;
 * - any other `assistant` (another family's: its `providerParts` are dropped) → `{ role: 'model', parts }` built
 *   from its text (when not empty) and one `{ functionCall: { name, args } }` per call (`args`: the arguments when
 *   they are a JSON object, else `{}`; no `id`), the first with `thoughtSignature: options.unsignedCallSignature`;
 *   one with neither text nor calls is left out (the API refuses a turn without parts);
 * - consecutive `tool_result`s → one `{ role: 'user' }` turn of `functionResponse` parts, in order:
 *   `{ name, response: { output } }` (`{ error }` when `isError`), with the call's `id` when Gemini gave it one.
 *
 * @example toGeminiContents([{ type: 'user', id: 'u1', text: 'hi' }], { unsignedCallSignature: false })
 *   // → [{ role: 'user', parts: [{ text: 'hi' }] }]
 */
export function toGeminiContents(items: readonly Item[], options: ContentsOptions): GeminiContent[] {
  const contents: GeminiContent[] = [];
  const calls = new Map<string, { name: string; id?: string }>();
  let results: GeminiPart[] | undefined;
  for (const item of items) {
    if (item.type !== 'tool_result') results = undefined;
    switch (item.type) {
      case 'user':
        contents.push({ role: 'user', parts: [{ text: item.text }] });
        break;
      case 'summary': // a summary the engine did not apply: sent as the user message it stands for
        contents.push({ role: 'user', parts: [{ text: summaryMessage(item).text }] });
        break;
      case 'assistant': {
        const parts = modelParts(item, calls, options);
        if (parts.length > 0) contents.push({ role: 'model', parts });
        break;
      }
      case 'tool_result': {
        const call = calls.get(item.callId);
        const response: GeminiPart = item.isError ? { error: item.output } : { output: item.output };
        const part: GeminiPart = {
          functionResponse: { ...(call?.id !== undefined ? { id: call.id } : {}), name: call?.name ?? '', response },
        };
        if (results) results.push(part);
        else contents.push({ role: 'user', parts: (results = [part]) });
        break;
      }
    }
  }
  return contents;
}

function modelParts(
  item: AssistantItem,
  calls: Map<string, { name: string; id?: string }>,
  options: ContentsOptions,
): readonly GeminiPart[] {
  const stored = replayableParts(item);
  if (stored) {
    let k = 0;
    for (const part of stored) {
      if (!isCallPart(part)) continue;
      const wireId = part.functionCall.id;
      calls.set(item.toolCalls[k++]!.callId, { name: part.functionCall.name, ...(wireId ? { id: wireId } : {}) });
    }
    return stored;
  }
  const parts: GeminiPart[] = item.text === '' ? [] : [{ text: item.text }];
  item.toolCalls.forEach((call, i) => {
    calls.set(call.callId, { name: call.name });
    const part: GeminiPart = { functionCall: { name: call.name, args: argsObject(call.arguments) } };
    const signature = i === 0 ? options.unsignedCallSignature : false;
    parts.push(signature ? { ...part, thoughtSignature: signature } : part);
  });
  return parts;
}

function argsObject(text: string): GeminiPart {
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as GeminiPart) : {};
  } catch {
    return {};
  }
}

/**
 * Converts tool specs to one Gemini `Tool`: `{ functionDeclarations: [{ name, description, parametersJsonSchema }] }`
 * (none for no tools).
 */
export function toGeminiTools(tools: readonly ToolSpec[]): { functionDeclarations: GeminiFunctionDeclaration[] }[] {
  if (tools.length === 0) return [];
  return [
    {
      functionDeclarations: tools.map((t) => ({
        name: t.name,
        description: t.description,
        parametersJsonSchema: t.parameters,
      })),
    },
  ];
}
