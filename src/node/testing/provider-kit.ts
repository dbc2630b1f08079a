/**
 * The kit a provider hands to `providerContract` (docs/testing.md, "Proving a provider adapter"): a
 * factory for the adapter under test, and a {@link WireKit} that teaches the suite's local HTTP server
 * (`startWireServer`) to speak the provider's wire format. Everything here is plain data and pure
 * functions of it, so a kit can be written from the provider's API reference alone.
 */
import type { ModelProvider } from '../../model/types.js';

/** One tool call of a scripted answer: its id, its tool, and its JSON arguments as the pieces they stream in. */
export interface ScriptedToolCall {
  /** The call id the wire carries (`call_…`, `toolu_…`); the adapter must report it unchanged. */
  readonly callId: string;
  readonly name: string;
  /**
   * The arguments as the stream delivers them, e.g. `['{"city":', '"Paris"}']`; joined they are a JSON
   * object. A wire format that sends a call whole (Gemini) joins them into one part.
   */
  readonly argumentChunks: readonly string[];
}

/**
 * What the model answers in one scripted turn, provider-neutral. The kit encodes it as its wire's
 * streamed body ({@link WireKit.stream}) or whole body ({@link WireKit.json}).
 * - `reasoning`: (optional) the model's reasoning before the text, as the deltas it streams in. A kit whose
 *   API has reasoning that must come back unchanged in the next request of a tool loop (Anthropic's
 *   thinking blocks and their signatures, Gemini's thought signatures) encodes it, with a signature its
 *   `validateRequest` can check without state (e.g. derived from the text); a kit without it ignores it;
 * - `text`: the answer's text as the deltas it streams in (one wire text delta each; may be empty);
 * - `toolCalls`: after the text, in this order (parallel calls when more than one);
 * - `finishReason`: loopctl's name; the kit writes its wire's own (`tool_calls` → `tool_use`, …);
 * - `usage`: token counts the wire reports (input and output tokens; the total is their sum).
 */
export interface ScriptedAnswer {
  readonly reasoning?: readonly string[];
  readonly text: readonly string[];
  readonly toolCalls: readonly ScriptedToolCall[];
  readonly finishReason: 'stop' | 'tool_calls' | 'length';
  readonly usage: { readonly inputTokens: number; readonly outputTokens: number };
}

/** A streamed body: response headers (`content-type` defaults to `text/event-stream`) and frames, written in order. */
export interface WireStream {
  readonly headers?: Readonly<Record<string, string>>;
  /** Each frame is written verbatim (an SSE frame includes its blank line: `data: {…}\n\n`). */
  readonly frames: readonly string[];
}

/** A whole (non-streamed) reply: status, headers and the body (an object is sent as JSON). */
export interface WireReply {
  readonly status: number;
  readonly headers?: Readonly<Record<string, string>>;
  readonly body: unknown;
}

/**
 * An API error to encode ({@link WireKit.error}): `status` (400, 429, 500, 529, …), a human `message`,
 * and `retryAfterMs` (ms) the server asks the client to wait, which the kit writes the way its API does
 * (`retry-after` in seconds, `retry-after-ms`, a `RetryInfo` in the body…). The suite asks only for
 * whole seconds.
 */
export interface WireErrorSpec {
  readonly status: number;
  readonly message: string;
  readonly retryAfterMs?: number;
}

/** One request as the server received it. `body` is the parsed JSON (the raw text when it is not JSON). */
export interface WireRequest {
  readonly method: string;
  /** The request target as sent: path and query, e.g. `/v1/chat/completions`. */
  readonly path: string;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  readonly body: unknown;
}

/**
 * How the suite's server speaks one provider's wire format. Every method is a pure function of its
 * arguments; the server does the sockets (cutting, stalling, holding a stream open).
 */
export interface WireKit {
  /**
   * Which requests the API serves, and how: `'stream'` for a request that asks for a streamed answer,
   * `'json'` for one that asks for a whole body, `undefined` for a path (or method) the API does not
   * have (the server answers 404 and the suite fails). E.g. Chat Completions: `POST /v1/chat/completions`,
   * `'stream'` when `body.stream === true`; Gemini: `…:streamGenerateContent` vs `…:generateContent`.
   */
  route(request: WireRequest): 'stream' | 'json' | undefined;
  /** The streamed body of `answer`, complete: every delta, the finish reason, the usage, the end marker. */
  stream(answer: ScriptedAnswer): WireStream;
  /** The whole body of `answer` (status 200), as a non-streamed request gets it. */
  json(answer: ScriptedAnswer): unknown;
  /** An HTTP error reply in the API's error shape, with `retryAfterMs` in its headers or body. */
  error(error: WireErrorSpec): WireReply;
  /**
   * The first frames of `stream(answer)` only: enough that the adapter has emitted at least the first
   * text delta (`answer.text[0]`), and not the finish reason or anything after it. The server sends
   * them and then cuts the socket (a broken stream) or holds it open and silent (a stalled stream).
   */
  cut(answer: ScriptedAnswer): readonly string[];
  /**
   * Frames of a stream that delivers the first text delta of `answer`, then the API's in-stream error
   * event for a transient server fault (overloaded, server error): what a real server sends when it
   * fails mid-answer. The adapter must fail the call with a `ModelCallError`.
   */
  streamError(answer: ScriptedAnswer): readonly string[];
  /**
   * A stream with one event of the wrong shape (a field of the wrong type that the adapter must read),
   * and `field`, the path the adapter's `ModelOutputError` names (e.g. `choices[0].delta.tool_calls`).
   */
  malformed(): { readonly frames: readonly string[]; readonly field: string };
  /**
   * What the real API would refuse with a 400, as its reason in words, or `undefined` for a valid
   * request. At least what breaks a tool loop: a tool call without its result, a result without its
   * call, a call id used twice, arguments that are not a JSON object, a provider part (a thinking block,
   * a signature) changed or dropped before a tool result. The server answers a refused request with
   * `error({ status: 400, message: reason })` and the suite fails.
   */
  validateRequest(request: WireRequest): string | undefined;
  /**
   * Variants of a valid request body (the tool loop's last request, which holds two turns of tool calls
   * and results) that the real API refuses, one per rule of `validateRequest` worth pinning: the suite
   * checks that `validateRequest` refuses each, so a validator that accepts everything cannot pass.
   * At least one. E.g. `[{ fault: 'a tool call without its result', body: withoutLastToolMessage }]`.
   */
  invalidVariants(body: unknown): readonly { readonly fault: string; readonly body: unknown }[];
}

/** The local server the suite starts for one test: `origin` is `http://127.0.0.1:<port>` (no trailing slash). */
export interface WireTarget {
  readonly origin: string;
}

/**
 * What `providerContract` takes: `name` (test titles), `provider(target)` (a fresh adapter pointed at
 * the local server; any key the adapter needs can be a dummy), and `wire`.
 *
 * @example
 * const kit: ProviderKit = {
 *   name: 'openaiChat',
 *   provider: ({ origin }) => openaiChat({ model: 'gpt-test', apiKey: 'test', baseURL: `${origin}/v1` }),
 *   wire: openaiChatWire,
 * };
 */
export interface ProviderKit {
  readonly name: string;
  provider(target: WireTarget): ModelProvider;
  readonly wire: WireKit;
}
