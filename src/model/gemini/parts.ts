import type { AssistantItem, ProviderParts } from '../../items.js';

/** The `family` tag of what the Gemini adapter keeps on an assistant Item (`providerParts.family`). */
export const GEMINI_FAMILY = 'gemini';

/**
 * The signature Google documents for a `functionCall` part Gemini did not write (history from another provider):
 * it tells the API to skip thought-signature validation for that call.
 */
export const SKIP_THOUGHT_SIGNATURE = 'skip_thought_signature_validator';

/** One Gemini `Part` as it travels on the wire (JSON): `text`, `thought`, `thoughtSignature`, `functionCall`, … */
export type GeminiPart = { readonly [key: string]: GeminiJson };
type GeminiJson = string | number | boolean | null | readonly GeminiJson[] | { readonly [key: string]: GeminiJson };

/**
 * `providerParts.data` of a Gemini-made assistant Item: `parts` is the model turn's `content.parts` as the API sent
 * them (streamed text joined into one part up to the part that carries a `thoughtSignature`; every signature on the
 * part it came with; function calls in wire order), replayed unchanged as the `model` turn of the next request.
 */
export interface GeminiPartsData {
  readonly parts: readonly GeminiPart[];
}

/** Wraps a model turn's parts as an Item's `providerParts` (`{ family: 'gemini', data: { parts } }`). */
export function toProviderParts(parts: readonly GeminiPart[]): ProviderParts {
  return { family: GEMINI_FAMILY, data: { parts } as unknown as ProviderParts['data'] };
}

/** Fields of a `Part` that describe its data rather than being it (a part holds exactly one data field besides). */
const PART_METADATA = new Set(['thought', 'thoughtSignature', 'partMetadata', 'videoMetadata', 'mediaResolution']);

/**
 * Why Gemini would refuse `part` as a `Part`, or undefined: it must be a JSON object holding exactly one data field
 * (`text` as a string, or an object such as `functionCall` with a string `name`, `functionResponse`, `inlineData`)
 * besides its metadata (`thought`, a boolean; `thoughtSignature`, a non-empty string). The one rule both the adapter
 * (before it replays stored parts) and the Gemini-shaped test servers apply.
 */
export function geminiPartFault(part: unknown): string | undefined {
  if (typeof part !== 'object' || part === null || Array.isArray(part)) return 'a part must be a JSON object';
  const fields = part as Record<string, unknown>;
  const data = Object.keys(fields).filter((key) => !PART_METADATA.has(key));
  if (data.length !== 1) return `required oneof field 'data' must have one initialized field (got ${data.length})`;
  const key = data[0]!;
  const value = fields[key];
  if (
    key === 'text' ? typeof value !== 'string' : typeof value !== 'object' || value === null || Array.isArray(value)
  ) {
    return `${key}: ${key === 'text' ? 'must be a string' : 'must be a JSON object'}`;
  }
  if (key === 'functionCall' && !isCallPart(fields as GeminiPart)) return 'functionCall.name must be a string';
  if (fields['thought'] !== undefined && typeof fields['thought'] !== 'boolean') return 'thought must be a boolean';
  const signature = fields['thoughtSignature'];
  if (signature !== undefined && (typeof signature !== 'string' || signature === '')) {
    return 'thoughtSignature must be a non-empty string';
  }
  return undefined;
}

/**
 * The parts to replay for an assistant Item: its Gemini `providerParts` when they are there, well formed (each part
 * passes {@link geminiPartFault}), and hold one `functionCall` part per tool call of the Item (same names, in order).
 * Anything else (another family's parts, none, parts edited out of shape in a saved session, or parts that no longer
 * match the Item) gives undefined, and the turn is rebuilt from the Item's text and calls.
 */
export function replayableParts(item: AssistantItem): readonly GeminiPart[] | undefined {
  const slot = item.providerParts;
  if (slot?.family !== GEMINI_FAMILY) return undefined;
  const data = slot.data as { parts?: unknown } | null;
  if (typeof data !== 'object' || data === null || !Array.isArray(data.parts) || data.parts.length === 0) {
    return undefined;
  }
  const parts = data.parts as unknown[];
  if (!parts.every((p) => geminiPartFault(p) === undefined)) return undefined;
  const calls = (parts as GeminiPart[]).flatMap((p) => (isCallPart(p) ? [p.functionCall] : []));
  if (calls.length !== item.toolCalls.length) return undefined;
  if (calls.some((call, i) => call.name !== item.toolCalls[i]!.name)) return undefined;
  return parts as GeminiPart[];
}

/** A part holding a `functionCall` with a string `name`. */
export function isCallPart(part: GeminiPart): part is GeminiPart & {
  readonly functionCall: { readonly name: string; readonly id?: string; readonly args?: GeminiJson };
} {
  const call = part['functionCall'];
  if (typeof call !== 'object' || call === null || Array.isArray(call)) return false;
  return typeof (call as GeminiPart)['name'] === 'string';
}
