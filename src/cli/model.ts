import OpenAI from 'openai';
import { asyncScheduler, throwError, timeout, type SchedulerLike } from 'rxjs';
import { DEFAULTS } from '../defaults.js';
import { openaiChat, openaiResponses, TimeoutError, type ModelProvider } from '../index.js';
import { checkBaseURL, UsageError, type CliOptions } from './args.js';
import { PROVIDER_NAMES, PROVIDER_SETTINGS, type ProviderName } from './providers.js';
import { startOfflineModel } from './offline/server.js';

/** The model a CLI run talks to. */
export interface SelectedModel {
  readonly provider: ModelProvider;
  /** One line for the header, e.g. `gpt-4o-mini (Chat Completions at https://…)`. */
  readonly label: string;
  /** The server's URL (connection errors name its address). */
  readonly baseURL: string;
  /** Stops what was started for it (the offline server); a no-op otherwise. */
  close(): Promise<void>;
}

/** The model name used with an API key or `--base-url` when `--model` is not given (OpenAI). */
export const DEFAULT_MODEL = PROVIDER_SETTINGS.openai.defaultModel;

/** A logger that drops everything: the SDK never writes to the CLI's stderr (only loopctl's own lines go there). */
const SILENT = { error: () => undefined, warn: () => undefined, info: () => undefined, debug: () => undefined };

/** How one provider's model is built from what `selectModel` resolved. */
type Build = (choice: Choice) => Promise<{ provider: ModelProvider; label: string; baseURL: string }>;

/** What `selectModel` resolved for the chosen provider. */
interface Choice {
  readonly model: string;
  readonly apiKey: string | undefined;
  readonly baseURL: string | undefined;
  readonly responses: boolean;
}

/** How each `--provider` is built (its variables and default model: `PROVIDER_SETTINGS`). */
const BUILDERS: Readonly<Record<ProviderName, Build>> = {
  anthropic: anthropicModel,
  gemini: geminiModel,
  openai: openaiModel,
};

/**
 * Chooses the model. The provider is `--provider`, else the first of anthropic, gemini, openai whose key variable is
 * set (`ANTHROPIC_API_KEY`; `GEMINI_API_KEY` or `GOOGLE_API_KEY`; `OPENAI_API_KEY`), else openai when `--api-key`,
 * `--base-url` or `OPENAI_BASE_URL` is given. Its key is `--api-key`, else its variable; its endpoint `--base-url`,
 * else its base-URL variable (`ANTHROPIC_BASE_URL`, `OPENAI_BASE_URL`), else the SDK's; a base URL without a key gets a
 * placeholder key (local servers ignore it). openai: `openaiChat` (`openaiResponses` with `--responses`); anthropic:
 * `anthropicMessages`; gemini: `gemini` with `baseURL` the origin (no `/v1beta`; default
 * `https://generativelanguage.googleapis.com`). Each SDK is an optional peer dependency, loaded only then. With no
 * provider at all, it starts the offline model in-process (`LOOPCTL_OFFLINE_DELAY_MS` sets its pace, default 15 ms per
 * chunk) and talks to it through `openaiChat`, the same path as a real provider. The SDK clients are the CLI's own,
 * with their logging off. A non-streamed request (the rescue of a broken stream) is bounded by `--timeout`, else by
 * `DEFAULTS.deadlines.requestMs` (see {@link boundNonStreamed}).
 * @throws UsageError for `--responses` with the offline model or another provider than openai, a base-URL variable
 *   that is not an http(s) URL (when `--base-url` does not override it), the provider's SDK not installed
 *   (`@anthropic-ai/sdk`, `@google/genai`), or a bad `LOOPCTL_OFFLINE_DELAY_MS`.
 */
export async function selectModel(options: CliOptions, env: NodeJS.ProcessEnv): Promise<SelectedModel> {
  const keyOf = (name: ProviderName) => PROVIDER_SETTINGS[name].keys.map((k) => env[k] || undefined).find(Boolean);
  const byKey = PROVIDER_NAMES.find((name) => keyOf(name) !== undefined);
  const custom = options.apiKey !== undefined || options.baseURL !== undefined || Boolean(env['OPENAI_BASE_URL']);
  const name = options.provider ?? byKey ?? (custom ? 'openai' : undefined);
  const requestMs = options.timeoutMs ?? DEFAULTS.deadlines.requestMs;
  if (name !== undefined) {
    const entry = PROVIDER_SETTINGS[name];
    const build = BUILDERS[name];
    if (options.responses && name !== 'openai') throw new UsageError('option --responses is for --provider openai');
    const variable = entry.baseUrlEnv;
    const envBaseURL = options.baseURL === undefined && variable ? env[variable] || undefined : undefined;
    if (envBaseURL !== undefined) checkBaseURL(variable!, envBaseURL);
    const choice: Choice = {
      model: options.model ?? entry.defaultModel,
      apiKey: options.apiKey ?? keyOf(name),
      baseURL: options.baseURL ?? envBaseURL,
      responses: options.responses,
    };
    const built = await build(choice);
    return { ...built, provider: boundNonStreamed(built.provider, requestMs), close: async () => undefined };
  }
  if (options.responses)
    throw new UsageError(
      'option --responses needs --base-url or OPENAI_API_KEY: the offline model speaks Chat Completions only',
    );
  const offline = await startOfflineModel({ delayMs: offlineDelay(env) });
  const provider = openaiChat({ model: options.model ?? offline.model, client: sdkClient('offline', offline.baseURL) });
  return {
    provider: boundNonStreamed(provider, requestMs),
    label: `offline model (rule-based, no AI; set a provider's API key or pass --base-url for a real one)`,
    baseURL: offline.baseURL,
    close: () => offline.close(),
  };
}

async function openaiModel(choice: Choice) {
  const { model } = choice;
  const client = sdkClient(choice.apiKey ?? 'not-needed', choice.baseURL);
  const provider = choice.responses ? openaiResponses({ model, client }) : openaiChat({ model, client });
  const api = choice.responses ? 'Responses API' : 'Chat Completions';
  return { provider, label: `${model} (${api} at ${client.baseURL})`, baseURL: client.baseURL };
}

async function anthropicModel(choice: Choice) {
  let sdk: typeof import('@anthropic-ai/sdk');
  let adapter: typeof import('../anthropic/index.js');
  try {
    [sdk, adapter] = await Promise.all([import('@anthropic-ai/sdk'), import('../anthropic/index.js')]);
  } catch (error) {
    const missing = (error as { code?: unknown }).code === 'ERR_MODULE_NOT_FOUND';
    if (!missing) throw error;
    throw new UsageError(
      '--provider anthropic needs @anthropic-ai/sdk: npm install @anthropic-ai/sdk@1.15.0 (or pass --provider openai)',
    );
  }
  const client = new sdk.Anthropic({
    apiKey: choice.apiKey ?? 'not-needed',
    baseURL: choice.baseURL,
    maxRetries: 0,
    logger: SILENT,
    logLevel: 'off',
  });
  const provider = adapter.anthropicMessages({ model: choice.model, client });
  return { provider, label: `${choice.model} (Anthropic Messages at ${client.baseURL})`, baseURL: client.baseURL };
}

async function geminiModel(choice: Choice) {
  let adapter: typeof import('../model/gemini/index.js');
  try {
    adapter = await import('../model/gemini/index.js');
  } catch (error) {
    if ((error as { code?: unknown }).code !== 'ERR_MODULE_NOT_FOUND') throw error;
    throw new UsageError(
      '--provider gemini needs @google/genai: npm install @google/genai@2.32.0 (or pass --provider openai)',
    );
  }
  const baseURL = choice.baseURL ?? 'https://generativelanguage.googleapis.com';
  const provider = adapter.gemini({ model: choice.model, apiKey: choice.apiKey ?? 'not-needed', baseURL });
  return { provider, label: `${choice.model} (Gemini at ${baseURL})`, baseURL };
}

function sdkClient(apiKey: string, baseURL: string | undefined): OpenAI {
  return new OpenAI({ apiKey, baseURL, maxRetries: 0, logger: SILENT, logLevel: 'off' });
}

/**
 * `provider` with a bound on each non-streamed request: no response within
 * `ms` ms fails it with a `TimeoutError` of kind `request` (retried like any
 * model deadline), on `scheduler`. Streamed requests are left to the run's
 * first-event and idle deadlines, so a long answer that keeps streaming is
 * never cut.
 */
export function boundNonStreamed(
  provider: ModelProvider,
  ms: number,
  scheduler: SchedulerLike = asyncScheduler,
): ModelProvider {
  const expired = () => throwError(() => new TimeoutError('request', ms));
  return {
    id: provider.id,
    ...(provider.stream !== undefined ? { stream: provider.stream } : {}),
    call: (request) =>
      request.stream === false
        ? provider.call(request).pipe(timeout({ first: ms, scheduler, with: expired }))
        : provider.call(request),
  };
}

/** The longest pause between two words of the offline model (ms): a minute, well within what a timer can wait. */
const MAX_OFFLINE_DELAY_MS = 60_000;

function offlineDelay(env: NodeJS.ProcessEnv): number {
  const raw = env['LOOPCTL_OFFLINE_DELAY_MS'];
  if (raw === undefined || raw === '') return 15;
  const ms = Number(raw);
  if (!Number.isFinite(ms) || ms < 0 || ms > MAX_OFFLINE_DELAY_MS) {
    const rule = `a number of ms from 0 to ${MAX_OFFLINE_DELAY_MS}`;
    throw new UsageError(`LOOPCTL_OFFLINE_DELAY_MS must be ${rule} (got ${JSON.stringify(raw)})`);
  }
  return ms;
}
