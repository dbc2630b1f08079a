import { checkDurationMs, sdkTimeoutMs } from '../../duration.js';
import { GoogleGenAI, type GenerateContentConfig, type GenerateContentParameters } from '@google/genai';
import { ConfigurationError } from '../../errors.js';
import {
  checkOptionalBaseURL,
  checkOptionalBoolean,
  checkOptionalClient,
  checkOptionalObject,
  checkOptionalText,
} from '../option-checks.js';
import { outputInstructions } from '../openai/structured.js';
import type { ModelProvider, ModelRequest } from '../types.js';
import { streamCall, singleCall } from './bridge.js';
import { toGeminiContents, toGeminiTools } from './contents.js';
import { SKIP_THOUGHT_SIGNATURE } from './parts.js';

/** Options of {@link gemini}. */
export interface GeminiOptions {
  /** Model name sent on the wire, e.g. `gemini-2.5-flash`; also names the provider (`gemini:<model>`). */
  readonly model: string;
  /**
   * A configured client. loopctl still passes its own `abortSignal`, `httpOptions.timeout` (when there is one),
   * `automaticFunctionCalling: { disable: true }` and `automaticContinuation: false` per request; give it no
   * `httpOptions.retryOptions` (the SDK would then retry behind the engine's back).
   */
  readonly client?: GoogleGenAI;
  /** API key when no `client` is given; defaults to `GOOGLE_API_KEY`, then `GEMINI_API_KEY` (the SDK's order). */
  readonly apiKey?: string;
  /**
   * Base URL when no `client` is given, e.g. `http://127.0.0.1:8080` (requests go to
   * `{baseURL}/{apiVersion}/models/{model}:generateContent`); defaults to the SDK's
   * (`https://generativelanguage.googleapis.com`).
   */
  readonly baseURL?: string;
  /** API version path segment when no `client` is given. Default `v1beta` (the SDK's). */
  readonly apiVersion?: string;
  /** The provider's default for `ModelRequest.stream` (the engine's `RunOptions.stream` overrides it). Default true. */
  readonly stream?: boolean;
  /**
   * The SDK timeout in ms of a request that carries no `timeoutMs`. `@google/genai`'s timer bounds the whole attempt,
   * body included, so by default there is none: the engine's deadlines bound a stream, the server bounds the rest
   * (10 min unary, 20 min streaming).
   */
  readonly timeoutMs?: number;
  /**
   * Extra `GenerateContentConfig` fields (e.g. `temperature`, `maxOutputTokens`,
   * `thinkingConfig: { includeThoughts: true }`, `safetySettings`). Its `tools` (Gemini's built-in ones, e.g.
   * `{ googleSearch: {} }`) are sent before the agent's function declarations; its `systemInstruction` is ignored
   * (the agent's instructions are the system instruction); it cannot override the structured-output fields of a
   * request with `output`, `abortSignal`, `httpOptions`, `automaticFunctionCalling` or `automaticContinuation`.
   */
  readonly config?: Readonly<GenerateContentConfig>;
  /**
   * How a request with `output` asks for JSON: `'native'` (default: `responseMimeType: 'application/json'` and
   * `responseJsonSchema`) or `'instructions'` (the schema in the system instruction).
   */
  readonly structuredOutputs?: 'native' | 'instructions';
  /**
   * The `thoughtSignature` put on the first `functionCall` of a model turn that Gemini did not write (history from
   * another provider, where there is no signature to replay), or `false` for none. Default
   * `'skip_thought_signature_validator'`, the value Google documents for such calls (Gemini 3 models refuse an
   * unsigned call of the current turn).
   */
  readonly unsignedCallSignature?: string | false;
}

/** Added to `ModelRequest.timeoutMs` so the engine's request deadline always fires before the SDK's timer, in ms. */
export const GEMINI_TIMEOUT_MARGIN_MS = 1_000;

/**
 * A {@link ModelProvider} speaking Gemini's `generateContent` / `streamGenerateContent?alt=sse` through
 * `@google/genai` (an optional peer dependency, 2.x: Node 20).
 *
 * `id` is `gemini:<model>`. `call(request)` is cold: subscribing sends `{ model, contents, config }` with
 * `contents` from the Items ({@link toGeminiContents}: Gemini's own parts and thought signatures replayed unchanged,
 * other families' `providerParts` dropped), `config.systemInstruction` from `instructions`, `config.tools` as
 * `functionDeclarations` (the JSON Schema in `parametersJsonSchema`), and for a request with `output`
 * `responseMimeType: 'application/json'` + `responseJsonSchema` (or the schema in the instruction). A request's
 * `providerOptions.gemini` holds `GenerateContentConfig` fields (`{ temperature: 0 }`, which the SDK sends as
 * `generationConfig.temperature`), merged after `options.config` and before what the adapter owns: its
 * `systemInstruction`, `tools`, `abortSignal`, `httpOptions`, `automaticFunctionCalling` and `automaticContinuation`
 * are ignored, as are the other families' options. Every request
 * carries its own `abortSignal`, `automaticFunctionCalling: { disable: true }`, `automaticContinuation: false` and,
 * when the engine set `timeoutMs`, `httpOptions.timeout = timeoutMs + 1000`. It emits deltas (streaming only), one
 * `response` (its `providerParts` are `{ family: 'gemini', data: { parts } }`), then completes; unsubscribing aborts
 * the request (the socket closes before `unsubscribe` returns). Errors are classified by `toGeminiCallError`.
 *
 * @throws ConfigurationError at construction naming the option out of shape (`model`, `timeoutMs`, `apiKey`,
 *   `baseURL`, `apiVersion`, `stream`, `config`, `config.tools`, `client`, `structuredOutputs`,
 *   `unsignedCallSignature`), or `apiKey` when there is no key: without `client`, it must come from `apiKey`,
 *   `GOOGLE_API_KEY` or `GEMINI_API_KEY`.
 * @example
 * const model = gemini({ model: 'gemini-2.5-flash', config: { thinkingConfig: { includeThoughts: true } } });
 */
export function gemini(options: GeminiOptions): ModelProvider {
  const client = clientFactory(options);
  const mode = options.structuredOutputs ?? 'native';
  if (mode !== 'native' && mode !== 'instructions') {
    throw new ConfigurationError('structuredOutputs', `must be 'native' or 'instructions' (got ${String(mode)})`);
  }
  const unsigned = options.unsignedCallSignature ?? SKIP_THOUGHT_SIGNATURE;
  if (unsigned !== false && (typeof unsigned !== 'string' || unsigned === '')) {
    throw new ConfigurationError('unsignedCallSignature', 'must be a non-empty string or false');
  }
  const params = (request: ModelRequest, signal: AbortSignal): GenerateContentParameters => {
    const native = request.output !== undefined && mode === 'native';
    const instructions =
      request.output !== undefined && !native
        ? outputInstructions(request.instructions, request.output)
        : request.instructions;
    const timeout =
      request.timeoutMs !== undefined ? sdkTimeoutMs(request.timeoutMs, GEMINI_TIMEOUT_MARGIN_MS) : options.timeoutMs;
    const { systemInstruction: _ignored, tools: builtIn, ...extra } = options.config ?? {};
    const tools = [...(builtIn ?? []), ...toGeminiTools(request.tools)];
    const config: GenerateContentConfig = {
      ...extra,
      ...shapedConfig(request),
      ...(instructions ? { systemInstruction: { parts: [{ text: instructions }] } } : {}),
      ...(tools.length > 0 ? { tools } : {}),
      ...(native ? { responseMimeType: 'application/json', responseJsonSchema: request.output!.schema } : {}),
      abortSignal: signal,
      ...(timeout !== undefined ? { httpOptions: { timeout } } : {}),
      automaticFunctionCalling: { disable: true },
      automaticContinuation: false,
    };
    const contents = toGeminiContents(request.items, { unsignedCallSignature: unsigned });
    return { model: options.model, contents: contents as GenerateContentParameters['contents'], config };
  };
  const call = (request: ModelRequest) =>
    request.stream
      ? streamCall((signal) => client().models.generateContentStream(params(request, signal)))
      : singleCall((signal) => client().models.generateContent(params(request, signal)));
  return { id: `gemini:${options.model}`, stream: options.stream ?? true, call };
}

/** The config fields a request's `providerOptions.gemini` cannot set: what the adapter owns on every request. */
const OWN_CONFIG_FIELDS = new Set([
  'systemInstruction',
  'tools',
  'abortSignal',
  'httpOptions',
  'automaticFunctionCalling',
  'automaticContinuation',
]);

/** `request.providerOptions.gemini` without {@link OWN_CONFIG_FIELDS}: `GenerateContentConfig` fields, or `{}`. */
function shapedConfig(request: ModelRequest): GenerateContentConfig {
  const fields = request.providerOptions?.['gemini'] ?? {};
  return Object.fromEntries(Object.entries(fields).filter(([key]) => !OWN_CONFIG_FIELDS.has(key)));
}

/**
 * Validates the options and returns a lazy client getter; without `client` the key is checked here, at
 * construction. @throws ConfigurationError (`model`, `timeoutMs`, `apiKey`, `baseURL` (not an http(s) URL),
 * `apiVersion`, `stream`, `config` (not an object), `config.tools` (not an array), `client` (no
 * `models.generateContent()` / `models.generateContentStream()`)).
 */
function clientFactory(options: GeminiOptions): () => GoogleGenAI {
  if (typeof options.model !== 'string' || options.model === '') {
    throw new ConfigurationError('model', 'must be a non-empty string');
  }
  if (options.timeoutMs !== undefined) checkDurationMs(options.timeoutMs, 'timeoutMs', { min: 1 });
  checkOptionalText('apiKey', options.apiKey);
  checkOptionalBaseURL('baseURL', options.baseURL);
  checkOptionalText('apiVersion', options.apiVersion);
  checkOptionalBoolean('stream', options.stream);
  checkOptionalObject('config', options.config);
  const builtIn: unknown = options.config?.tools;
  if (builtIn !== undefined && !Array.isArray(builtIn)) {
    throw new ConfigurationError('config.tools', 'must be an array of Gemini tools, e.g. [{ googleSearch: {} }]');
  }
  checkOptionalClient('client', options.client, ['models.generateContent', 'models.generateContentStream']);
  const given = options.client;
  if (given) return () => given;
  const env = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env;
  const apiKey = options.apiKey ?? env?.['GOOGLE_API_KEY'] ?? env?.['GEMINI_API_KEY'];
  if (!apiKey) {
    throw new ConfigurationError(
      'apiKey',
      'no API key: pass apiKey or client, or set GOOGLE_API_KEY or GEMINI_API_KEY',
    );
  }
  const httpOptions = {
    ...(options.baseURL !== undefined ? { baseUrl: options.baseURL } : {}),
    ...(options.apiVersion !== undefined ? { apiVersion: options.apiVersion } : {}),
  };
  let client: GoogleGenAI | undefined;
  return () => (client ??= new GoogleGenAI({ apiKey, httpOptions }));
}
