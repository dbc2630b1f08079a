import { checkDurationMs, sdkTimeoutMs } from '../../duration.js';
import Anthropic from '@anthropic-ai/sdk';
import { ConfigurationError } from '../../errors.js';
import {
  checkOptionalBaseURL,
  checkOptionalBoolean,
  checkOptionalClient,
  checkOptionalObject,
  checkOptionalText,
  isPlainObject,
} from '../option-checks.js';
import type { ModelRequest } from '../types.js';

/**
 * Extended thinking as the Messages API takes it: `{ type: 'enabled', budget_tokens }` (at least 1 024 and below
 * `max_tokens`), `{ type: 'adaptive' }` or `{ type: 'disabled' }`. Sent as `thinking` on every request.
 */
export type AnthropicThinking =
  | { readonly type: 'enabled'; readonly budget_tokens: number; readonly display?: 'summarized' | 'omitted' }
  | { readonly type: 'adaptive' }
  | { readonly type: 'disabled' };

/**
 * Prompt caching: where `anthropicMessages` puts `cache_control: { type: 'ephemeral', ttl? }` markers (at most the
 * API's four breakpoints): `system` on the system prompt's block, `tools` on the last tool definition, `history` on
 * the last content block of the last message (the whole conversation so far is cached for the next turn).
 */
export interface AnthropicCaching {
  /** Mark the system prompt. Default true. */
  readonly system?: boolean;
  /** Mark the last tool definition (the whole tool list is cached). Default true. */
  readonly tools?: boolean;
  /** Mark the last content block of the last message. Default true. */
  readonly history?: boolean;
  /** The cache lifetime, `'5m'` (the API's default) or `'1h'`. */
  readonly ttl?: '5m' | '1h';
}

/** Options of {@link anthropicMessages}. */
export interface AnthropicOptions {
  /** Model name sent on the wire, e.g. `claude-sonnet-4-5`; also names the provider (`anthropic:<model>`). */
  readonly model: string;
  /** A configured client. loopctl still passes `maxRetries: 0`, `timeout` and its own `signal` per request. */
  readonly client?: Anthropic;
  /** API key when no `client` is given; defaults to `ANTHROPIC_API_KEY` (local servers accept any non-empty key). */
  readonly apiKey?: string;
  /**
   * Base URL when no `client` is given, without `/v1` (the SDK appends `/v1/messages`), e.g. `http://127.0.0.1:8080`;
   * defaults to the SDK's (`ANTHROPIC_BASE_URL` or api.anthropic.com).
   */
  readonly baseURL?: string;
  /** The provider's default for `ModelRequest.stream` (the engine's `RunOptions.stream` overrides it). Default true. */
  readonly stream?: boolean;
  /** `max_tokens` of every request (the API requires it), in tokens. Default {@link DEFAULT_MAX_TOKENS} (4 096). */
  readonly maxTokens?: number;
  /** Extended thinking, sent as `thinking` (see {@link AnthropicThinking}); absent: not sent (the model's default). */
  readonly thinking?: AnthropicThinking;
  /** Prompt caching: `true` for every marker ({@link AnthropicCaching}), or which ones; absent: no markers. */
  readonly cache?: boolean | AnthropicCaching;
  /**
   * How a request with `output` (an agent's structured answer) asks for JSON: `'native'` (default: the API's
   * `output_config.format`) or `'instructions'` (the schema in the system prompt, for servers without it).
   */
  readonly structuredOutputs?: 'native' | 'instructions';
  /** The SDK's per-request timeout in ms when the request carries no `timeoutMs`. Default 600 000. */
  readonly timeoutMs?: number;
  /**
   * Extra body fields (e.g. `temperature`, `top_k`, `metadata`, `tool_choice`); they cannot override model,
   * messages, system, tools, max_tokens, thinking or stream.
   */
  readonly request?: Readonly<Record<string, unknown>>;
}

/** `max_tokens` when the options give none, in tokens. */
export const DEFAULT_MAX_TOKENS = 4_096;
/** The SDK timeout used when neither the request nor the options give one, in ms. */
export const DEFAULT_TIMEOUT_MS = 600_000;
/** Added to `ModelRequest.timeoutMs` so the engine's request deadline always fires before the SDK's timer, in ms. */
export const SDK_TIMEOUT_MARGIN_MS = 1_000;

/** The options once checked: what every request of one provider instance shares. */
export interface CheckedOptions {
  readonly model: string;
  readonly maxTokens: number;
  readonly thinking: AnthropicThinking | undefined;
  readonly cache: Required<Omit<AnthropicCaching, 'ttl'>> & Pick<AnthropicCaching, 'ttl'>;
  readonly caching: boolean;
  readonly client: () => Anthropic;
}

/**
 * Checks the options and returns what requests share, with a lazy client. Without `client` the key is checked here
 * (construction), not at call time. The client is built on the first call with `maxRetries: 0` and
 * `dangerouslyAllowBrowser: true` (the core is isomorphic).
 * @throws ConfigurationError naming `model`, `apiKey` (not a non-empty string, or none at all), `baseURL` (not an
 *   http(s) URL), `stream`, `request` (not an object), `client` (no `messages.create()`), `maxTokens`, `timeoutMs`,
 *   `thinking`, `thinking.budget_tokens`, `cache`, `cache.system` / `cache.tools` / `cache.history` (not booleans) or
 *   `cache.ttl`.
 */
export function checkOptions(options: AnthropicOptions): CheckedOptions {
  if (typeof options.model !== 'string' || options.model === '') {
    throw new ConfigurationError('model', 'must be a non-empty string');
  }
  if (options.timeoutMs !== undefined) checkDurationMs(options.timeoutMs, 'timeoutMs', { min: 1 });
  checkOptionalText('apiKey', options.apiKey);
  checkOptionalBaseURL('baseURL', options.baseURL);
  checkOptionalBoolean('stream', options.stream);
  checkOptionalObject('request', options.request);
  checkOptionalClient('client', options.client, ['messages.create']);
  const maxTokens = options.maxTokens ?? DEFAULT_MAX_TOKENS;
  if (!Number.isInteger(maxTokens) || maxTokens < 1) {
    throw new ConfigurationError('maxTokens', `must be a positive whole number of tokens (got ${String(maxTokens)})`);
  }
  const thinking = options.thinking;
  if (thinking !== undefined) {
    checkOptionalObject('thinking', thinking);
    const type = (thinking as { type?: unknown }).type;
    if (type !== 'enabled' && type !== 'adaptive' && type !== 'disabled') {
      throw new ConfigurationError(
        'thinking',
        `type must be 'enabled', 'adaptive' or 'disabled' (got ${String(type)})`,
      );
    }
    if (type === 'enabled') {
      const budget = (thinking as { budget_tokens?: unknown }).budget_tokens;
      if (typeof budget !== 'number' || !Number.isInteger(budget) || budget < 1024 || budget >= maxTokens) {
        const rule = `must be a whole number ≥ 1024 and below maxTokens ${maxTokens} (got ${String(budget)})`;
        throw new ConfigurationError('thinking.budget_tokens', rule);
      }
    }
  }
  const cache = checkCache(options.cache);
  return {
    model: options.model,
    maxTokens,
    thinking,
    cache: cache ?? { system: false, tools: false, history: false },
    caching: cache !== undefined,
    client: clientGetter(options),
  };
}

function checkCache(value: AnthropicOptions['cache']): CheckedOptions['cache'] | undefined {
  if (value === undefined || value === false) return undefined;
  if (value === true) return { system: true, tools: true, history: true };
  if (!isPlainObject(value)) {
    const got = Array.isArray(value) ? 'an array' : String(value);
    throw new ConfigurationError('cache', `must be a boolean or { system?, tools?, history?, ttl? } (got ${got})`);
  }
  const marks = value as AnthropicCaching;
  for (const mark of ['system', 'tools', 'history'] as const) checkOptionalBoolean(`cache.${mark}`, marks[mark]);
  if (marks.ttl !== undefined && marks.ttl !== '5m' && marks.ttl !== '1h') {
    throw new ConfigurationError('cache.ttl', `must be '5m' or '1h' (got ${String(marks.ttl)})`);
  }
  return {
    system: marks.system ?? true,
    tools: marks.tools ?? true,
    history: marks.history ?? true,
    ...(marks.ttl !== undefined ? { ttl: marks.ttl } : {}),
  };
}

function clientGetter(options: AnthropicOptions): () => Anthropic {
  const given = options.client;
  if (given) return () => given;
  const env = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env;
  const apiKey = options.apiKey ?? env?.['ANTHROPIC_API_KEY'];
  if (!apiKey) throw new ConfigurationError('apiKey', 'no API key: pass apiKey or client, or set ANTHROPIC_API_KEY');
  let client: Anthropic | undefined;
  return () =>
    (client ??= new Anthropic({
      apiKey,
      baseURL: options.baseURL,
      maxRetries: 0,
      dangerouslyAllowBrowser: true,
      logLevel: 'off', // a malformed event is a typed error already; the SDK would also print it
    }));
}

/**
 * The SDK timeout of one request, in ms: `request.timeoutMs + SDK_TIMEOUT_MARGIN_MS` when the engine sets a
 * deadline, else `options.timeoutMs`, else 600 000 (always explicit: the SDK never computes its own).
 */
export function requestTimeout(options: AnthropicOptions, request: ModelRequest): number {
  if (request.timeoutMs !== undefined) return sdkTimeoutMs(request.timeoutMs, SDK_TIMEOUT_MARGIN_MS);
  return options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
}
