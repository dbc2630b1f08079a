import { checkDurationMs, sdkTimeoutMs } from '../../duration.js';
import OpenAI, { APIError } from 'openai';
import { Observable, type Subscriber } from 'rxjs';
import { ConfigurationError, ModelCallError, ModelOutputError } from '../../errors.js';
import { BridgeCall, sdkBridge, type BridgeContext } from '../sdk-bridge.js';
import type { ModelEvent, ModelRequest, ModelResponse } from '../types.js';
import { isConnectionFailure, toModelCallError } from './errors.js';
import { EventStreamReader, type ChunkSink } from './event-stream.js';
import type { StructuredOutputsMode } from './structured.js';
import { isEventStream, wholeBodyResponse, type JsonAnswer } from './whole-body.js';

/** Options of `openaiChat` and `openaiResponses`. */
export interface OpenAIProviderOptions {
  /** Model name sent on the wire, e.g. `gpt-4o-mini`; also names the provider (`openai:<model>`). */
  readonly model: string;
  /**
   * A configured client. loopctl still passes `maxRetries: 0`, `timeout` and its own `signal` per
   * request (docs/recovery.md).
   */
  readonly client?: OpenAI;
  /** API key when no `client` is given; defaults to `OPENAI_API_KEY` (local servers accept any non-empty key). */
  readonly apiKey?: string;
  /**
   * Base URL when no `client` is given, e.g. `http://127.0.0.1:11434/v1`; defaults to the SDK's (`OPENAI_BASE_URL` or
   * api.openai.com).
   */
  readonly baseURL?: string;
  /** The provider's default for `ModelRequest.stream` (the engine's `RunOptions.stream` overrides it). Default true. */
  readonly stream?: boolean;
  /**
   * The SDK's per-request timeout in ms (connect + response headers) when the request carries no `timeoutMs`. Default
   * 600 000.
   */
  readonly timeoutMs?: number;
  /**
   * Extra body fields (e.g. `temperature`, `parallel_tool_calls`); they cannot override model, input/messages, tools or
   * stream.
   */
  readonly request?: Readonly<Record<string, unknown>>;
  /**
   * How a request with `output` (an agent's structured answer) asks for JSON: `'native'`,
   * `'instructions'` or `'auto'` (default; see {@link StructuredOutputsMode}).
   */
  readonly structuredOutputs?: StructuredOutputsMode;
}

/** The SDK timeout used when neither the request nor the options give one (the SDK's own default), in ms. */
export const DEFAULT_TIMEOUT_MS = 600_000;
/** Added to `ModelRequest.timeoutMs` so the engine's request deadline always fires before the SDK's timer, in ms. */
export const SDK_TIMEOUT_MARGIN_MS = 1_000;

/** Per-request options passed to every SDK call. */
export interface SdkRequestOptions {
  readonly signal: AbortSignal;
  readonly maxRetries: 0;
  readonly timeout: number;
}

/**
 * Validates the options and returns a lazy client getter. Without `client`,
 * the key is checked HERE (construction), not at call time: no `apiKey` and
 * no `OPENAI_API_KEY` throws `ConfigurationError` naming `apiKey`. The client
 * (`maxRetries: 0`, `dangerouslyAllowBrowser: true`: the core is isomorphic)
 * is built on the first call. @throws ConfigurationError (`model`, `timeoutMs`, `apiKey`).
 * (`structuredOutputs` is checked by each provider: `checkStructuredOutputs`.)
 */
export function clientFactory(options: OpenAIProviderOptions): () => OpenAI {
  if (typeof options.model !== 'string' || options.model === '') {
    throw new ConfigurationError('model', 'must be a non-empty string');
  }
  if (options.timeoutMs !== undefined) checkDurationMs(options.timeoutMs, 'timeoutMs', { min: 1 });
  const given = options.client;
  if (given) return () => given;
  const env = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env;
  const apiKey = options.apiKey ?? env?.['OPENAI_API_KEY'];
  if (!apiKey) throw new ConfigurationError('apiKey', 'no API key: pass apiKey or client, or set OPENAI_API_KEY');
  let client: OpenAI | undefined;
  return () =>
    (client ??= new OpenAI({ apiKey, baseURL: options.baseURL, maxRetries: 0, dangerouslyAllowBrowser: true }));
}

/**
 * The SDK timeout of one request, in ms: `request.timeoutMs + SDK_TIMEOUT_MARGIN_MS`
 * when the engine sets a deadline, else `options.timeoutMs`, else 600 000.
 */
export function requestTimeout(options: OpenAIProviderOptions, request: ModelRequest): number {
  if (request.timeoutMs !== undefined) return sdkTimeoutMs(request.timeoutMs, SDK_TIMEOUT_MARGIN_MS);
  return options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
}

/** Reads a stream chunk by chunk; `finish` returns the final response or throws. */
export interface StreamReducer<C> {
  push(chunk: C): readonly ModelEvent[];
  finish(): ModelResponse;
  /** True once the chunks read hold the whole answer, so a connection lost now loses nothing (optional). */
  complete?(): boolean;
}

/**
 * A streaming SDK call as loopctl uses it: the SDK's `APIPromise` of its `Stream`, read with `asResponse()`. The SDK
 * builds, authenticates and sends the request, applies the timeout (until the response headers) and turns a non-2xx
 * answer into its `APIError`; the body of a 2xx answer is loopctl's to read ({@link readEventStream}).
 */
export interface StreamingSdkCall {
  asResponse(): Promise<Response>;
}

/**
 * A cold Observable over one streamed SDK call. Each subscription creates its
 * OWN `AbortController` (the SDK never removes the listener it adds to the
 * signal: docs/recovery.md), calls `send({ signal, maxRetries: 0, timeout })`,
 * takes the raw response (`asResponse()`), reads its body with an
 * {@link EventStreamReader} (one read, many events, each pushed synchronously
 * through a `new reducer()`), emits the reducer's deltas, then
 * one `response`, then completes. Unsubscribing aborts the controller (the
 * socket closes) and cancels the body reader; nothing is emitted after it and
 * the abort error is swallowed. Failures error with `ModelCallError`
 * (`streamStarted` is true once a chunk was read); a data line that is not JSON
 * is `invalid_json`, after the good events before it in the same read.
 *
 * A 200 whose `content-type` is not `text/event-stream` is not parsed as a
 * stream: a complete JSON answer (`json`) is the response, anything else a
 * `not_event_stream` error ({@link wholeBodyResponse}). A missing header is
 * read as a stream.
 *
 * A connection failure after the reducer says the answer is `complete` (Chat
 * Completions: a `finish_reason` arrived) ends the stream: the response is
 * returned, without the usage that would have followed.
 */
export function streamCall<C>(
  timeout: number,
  send: (options: SdkRequestOptions) => StreamingSdkCall,
  reducer: new () => StreamReducer<C>,
  json: JsonAnswer,
): Observable<ModelEvent> {
  return new Observable<ModelEvent>((subscriber) => {
    const call = new StreamCall<C>(subscriber, timeout, send, reducer, json);
    void call.run();
    return call;
  });
}

/**
 * One subscription of {@link streamCall}, as one object: the bridge's context and controller
 * ({@link BridgeCall}), the request's parameters, the body reader and the chunk reducer; the event stream's
 * parser state is its {@link EventStreamReader}, made once the body is there.
 */
class StreamCall<C> extends BridgeCall implements ChunkSink<C> {
  #reader: ReadableStreamDefaultReader<Uint8Array> | undefined;
  #state: StreamReducer<C> | undefined;

  constructor(
    subscriber: Subscriber<ModelEvent>,
    private readonly timeout: number,
    private readonly send: (options: SdkRequestOptions) => StreamingSdkCall,
    private readonly reducer: new () => StreamReducer<C>,
    private readonly json: JsonAnswer,
  ) {
    super(subscriber, toModelCallError);
  }

  /**
   * Sends the request a microtask after the subscription (nothing for one closed at once), reads it and settles:
   * the response, or the error. One async frame for the whole request.
   */
  async run(): Promise<void> {
    await undefined;
    if (this.closed) return;
    let reader: ReadableStreamDefaultReader<Uint8Array> | undefined;
    let settled = false; // the body ended or failed: nothing to cancel
    try {
      const response = await this.send({ signal: this.signal, maxRetries: 0, timeout: this.timeout }).asResponse();
      const contentType = response.headers.get('content-type');
      if (contentType !== null && !isEventStream(contentType)) {
        return this.respond(await wholeBodyResponse(response, contentType, this.json));
      }
      if (this.closed) return void response.body?.cancel().catch(ignore);
      if (!response.body) {
        throw new ModelCallError(`the server answered HTTP ${response.status} with no body`, {
          status: response.status,
          code: 'invalid_response',
          retryable: false,
        });
      }
      reader = this.#reader = response.body.getReader();
      const state = (this.#state = new this.reducer());
      const events = new EventStreamReader<C>(this, response.headers);
      // EventStreamReader.read's loop, in this frame: an idle request holds one async frame, not two.
      for (;;) {
        let next: ReadableStreamReadResult<Uint8Array>;
        try {
          next = await reader.read();
        } catch (error) {
          settled = true;
          if (this.closed) return;
          // The answer was complete before the connection went: accept it rather than pay for a rescue.
          if (!(state.complete?.() && isConnectionFailure(error))) throw error;
          break;
        }
        if (next.done) {
          settled = true;
          if (!events.end()) return;
          break;
        }
        if (!events.push(next.value)) {
          void reader.cancel().catch(ignore); // the subscriber left while we emitted
          return;
        }
      }
      if (this.closed) return;
      this.respond(read(() => state.finish(), 'malformed_chunk'));
    } catch (error) {
      if (reader && !settled) void reader.cancel().catch(ignore); // released before the error is delivered
      this.fail(error);
    }
  }

  /** One chunk of the body: its deltas through the reducer. @returns false once closed. */
  chunk(chunk: C): boolean {
    let events: readonly ModelEvent[];
    try {
      events = this.#state!.push(chunk);
    } catch (err) {
      throw typed(err, 'malformed_chunk');
    }
    this.started = true;
    for (let i = 0; i < events.length; i++) if (!this.emit(events[i]!)) return false;
    return true;
  }

  override unsubscribe(): void {
    super.unsubscribe();
    const reader = this.#reader;
    this.#reader = undefined;
    if (reader) void reader.cancel().catch(ignore);
  }
}

const ignore = (): undefined => undefined;

/**
 * Runs a reducer step on wire data. Its typed errors pass; anything else (a
 * shape no check foresaw) becomes a `ModelOutputError` with the original as
 * `cause`, so no raw TypeError reaches a run.
 */
function read<T>(step: () => T, code: 'malformed_chunk' | 'malformed_response'): T {
  try {
    return step();
  } catch (err) {
    throw typed(err, code);
  }
}

/** The error {@link read} throws for `err`. */
function typed(err: unknown, code: 'malformed_chunk' | 'malformed_response'): unknown {
  if (err instanceof ModelOutputError || err instanceof ModelCallError || err instanceof APIError) return err;
  const what = code === 'malformed_chunk' ? 'a stream chunk' : 'the response';
  return new ModelOutputError(`${what} could not be read`, { code, cause: err });
}

/**
 * A cold Observable over one non-streamed SDK call: sends it with its own
 * `AbortController`, emits one `response` (no deltas) and completes.
 * Unsubscribing aborts the request (the socket closes). Errors: `ModelCallError`.
 */
export function singleCall<R>(
  timeout: number,
  send: (options: SdkRequestOptions) => PromiseLike<R>,
  toResponse: (result: R) => ModelResponse,
): Observable<ModelEvent> {
  return bridge(timeout, async (ctx, options) => {
    const result = await send(options);
    return ctx.closed ? undefined : read(() => toResponse(result), 'malformed_response');
  });
}

/** {@link sdkBridge} with the OpenAI SDK's per-request options and error classification. */
function bridge(
  timeout: number,
  body: (ctx: BridgeContext, options: SdkRequestOptions) => Promise<ModelResponse | undefined>,
): Observable<ModelEvent> {
  return sdkBridge((ctx, signal) => body(ctx, { signal, maxRetries: 0, timeout }), toModelCallError);
}
