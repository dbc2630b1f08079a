import OpenAI from 'openai';
import { asyncScheduler, throwError, timeout, type SchedulerLike } from 'rxjs';
import { DEFAULTS } from '../defaults.js';
import { openaiChat, openaiResponses, TimeoutError, type ModelProvider } from '../index.js';
import { checkBaseURL, UsageError, type CliOptions } from './args.js';
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

/** The model name used with an API key or `--base-url` when `--model` is not given. */
export const DEFAULT_MODEL = 'gpt-4o-mini';

/** A logger that drops everything: the SDK never writes to the CLI's stderr (only loopctl's own lines go there). */
const SILENT = { error: () => undefined, warn: () => undefined, info: () => undefined, debug: () => undefined };

/**
 * Chooses the model: with `--base-url` (or `OPENAI_BASE_URL`) or an API key
 * (`--api-key`, else `OPENAI_API_KEY`), `openaiChat` (`openaiResponses` with
 * `--responses`) against that endpoint; a base URL without a key gets a
 * placeholder key (local servers ignore it). With neither, it starts the
 * offline model in-process (`LOOPCTL_OFFLINE_DELAY_MS` sets its pace, default
 * 15 ms per chunk) and talks to it through `openaiChat`, the same path as a
 * real provider. The SDK client is the CLI's own, with its logging off.
 * A non-streamed request (the rescue of a broken stream) is bounded by
 * `--timeout`, else by `DEFAULTS.deadlines.requestMs` (see {@link boundNonStreamed}).
 * @throws UsageError for `--responses` with the offline model (it speaks Chat
 *   Completions only), an `OPENAI_BASE_URL` that is not an http(s) URL (when
 *   `--base-url` does not override it) or a bad `LOOPCTL_OFFLINE_DELAY_MS`.
 */
export async function selectModel(options: CliOptions, env: NodeJS.ProcessEnv): Promise<SelectedModel> {
  const apiKey = options.apiKey ?? (env['OPENAI_API_KEY'] || undefined);
  const envBaseURL = options.baseURL === undefined ? env['OPENAI_BASE_URL'] || undefined : undefined;
  if (envBaseURL !== undefined) checkBaseURL('OPENAI_BASE_URL', envBaseURL);
  const baseURL = options.baseURL ?? envBaseURL;
  const requestMs = options.timeoutMs ?? DEFAULTS.deadlines.requestMs;
  if (apiKey !== undefined || baseURL !== undefined) {
    const model = options.model ?? DEFAULT_MODEL;
    const client = sdkClient(apiKey ?? 'not-needed', baseURL);
    const provider = options.responses ? openaiResponses({ model, client }) : openaiChat({ model, client });
    const api = options.responses ? 'Responses API' : 'Chat Completions';
    const url = client.baseURL;
    const label = `${model} (${api} at ${url})`;
    return { provider: boundNonStreamed(provider, requestMs), label, baseURL: url, close: async () => undefined };
  }
  if (options.responses)
    throw new UsageError(
      'option --responses needs --base-url or OPENAI_API_KEY: the offline model speaks Chat Completions only',
    );
  const offline = await startOfflineModel({ delayMs: offlineDelay(env) });
  const provider = openaiChat({ model: options.model ?? offline.model, client: sdkClient('offline', offline.baseURL) });
  return {
    provider: boundNonStreamed(provider, requestMs),
    label: `offline model (rule-based, no AI; set OPENAI_API_KEY or pass --base-url for a real one)`,
    baseURL: offline.baseURL,
    close: () => offline.close(),
  };
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

function offlineDelay(env: NodeJS.ProcessEnv): number {
  const raw = env['LOOPCTL_OFFLINE_DELAY_MS'];
  if (raw === undefined || raw === '') return 15;
  const ms = Number(raw);
  if (!Number.isFinite(ms) || ms < 0)
    throw new UsageError(`LOOPCTL_OFFLINE_DELAY_MS must be a number of ms >= 0 (got ${JSON.stringify(raw)})`);
  return ms;
}
