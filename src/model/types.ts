import type { Observable } from 'rxjs';
import type { FinishReason } from '../events.js';
import type { Item, ProviderParts, TokenCounts, ToolCall } from '../items.js';

/** A JSON Schema object as sent on the wire (`z.toJSONSchema` output or an MCP tool's `inputSchema`). */
export type JsonSchema = { readonly [key: string]: unknown };

/**
 * A tool as a model sees it: name, description and JSON Schema parameters. Frozen, and for a zod tool its
 * `parameters` too, deeply: one object shared by every request of every agent that lists the tool. A provider that
 * changes a schema for its wire (as the built-in adapters do) copies it first; writing into it throws a `TypeError`.
 */
export interface ToolSpec {
  readonly name: string;
  readonly description: string;
  readonly parameters: JsonSchema;
}

/**
 * The schema an agent's final answer must match (an agent's `output`, docs/run-control.md,
 * "Structured output"), as a provider sends it: `name` matches `^[a-zA-Z0-9_-]{1,64}$`, `schema` is
 * the JSON Schema of the answer, `strict` is true when the schema keeps OpenAI's strict-mode rules
 * (every object closed, every property required), so a provider may ask for strict decoding.
 */
export interface OutputSpec {
  readonly name: string;
  readonly schema: JsonSchema;
  readonly strict: boolean;
}

/**
 * Per-family request options passed through to the wire (docs/long-runs.md, "Request shaping"): each key is
 * a provider family (`openai`, `anthropic`, `gemini`, …), each value fields of that family's request body
 * (`{ openai: { temperature: 0, max_completion_tokens: 512 } }`). An adapter merges its own family's object into
 * the body it sends (after its constructor's `request` options, before the fields it owns: model, messages,
 * tools); other families' objects are ignored, so one request can carry options for a fallback of another
 * family.
 */
export type ProviderOptions = { readonly [family: string]: { readonly [field: string]: unknown } };

/**
 * One model request, provider-neutral. `items` always has every tool call
 * paired with a result. `timeoutMs` is the whole-request deadline the engine
 * enforces; adapters pass it to their SDK per request so the SDK's own
 * timer never fires first (docs/recovery.md, "Known behaviour of dependencies").
 */
export interface ModelRequest {
  readonly instructions: string;
  readonly items: readonly Item[];
  readonly tools: readonly ToolSpec[];
  readonly stream: boolean;
  readonly timeoutMs?: number;
  /**
   * Set when the agent wants a structured final answer: a provider asks for JSON matching it (natively or
   * by instructions); a provider that cannot ignores it (the engine validates the answer either way).
   */
  readonly output?: OutputSpec;
  /** Per-family wire options (a `prepareRequest` hook sets them): see {@link ProviderOptions}. */
  readonly providerOptions?: ProviderOptions;
}

/**
 * The complete answer of one model call. `usage`: the counts the server reported; absent when it sent none.
 * `providerParts`: what only this provider's family understands (thinking signatures, thought signatures);
 * the engine keeps it on the assistant Item it builds, and the same family's adapter replays it.
 */
export interface ModelResponse {
  readonly text: string;
  readonly toolCalls: readonly ToolCall[];
  readonly finishReason: FinishReason;
  readonly usage?: TokenCounts;
  readonly refusal?: string;
  readonly reasoning?: string;
  readonly providerParts?: ProviderParts;
}

/**
 * What a provider's `call()` emits: any number of deltas, then exactly one
 * `response` (the authoritative result), then completion. A failure is an
 * Observable error, ideally a `ModelCallError` with `retryable` set.
 */
export type ModelEvent =
  | { readonly type: 'text_delta'; readonly delta: string }
  | { readonly type: 'reasoning_delta'; readonly delta: string }
  | { readonly type: 'refusal_delta'; readonly delta: string }
  /** A tool call's arguments are streaming; the engine drops such a call from `partial`. */
  | {
      readonly type: 'tool_call_delta';
      readonly index: number;
      readonly callId?: string;
      readonly name?: string;
      readonly argumentsDelta: string;
    }
  | { readonly type: 'response'; readonly response: ModelResponse };

/**
 * A model behind one interface. `call` is cold: subscribing
 * sends the request, unsubscribing aborts it (the HTTP socket closes).
 * Recovery, deadlines and fallback live in the engine, not in providers.
 * `id` names the model in events (e.g. `openai:gpt-4o-mini`); `stream` is the
 * provider's default, overridden by `RunOptions.stream`.
 */
export interface ModelProvider {
  readonly id: string;
  readonly stream?: boolean;
  call(request: ModelRequest): Observable<ModelEvent>;
}
