import { openaiChat, openaiResponses, type ModelProvider } from '../index.js';
import { checkBaseURL, UsageError, type CliOptions } from './args.js';
import { startOfflineModel } from './offline/server.js';

/** The model a CLI run talks to. */
export interface SelectedModel {
  readonly provider: ModelProvider;
  /** One line for the header, e.g. `gpt-4o-mini (Chat Completions at https://…)`. */
  readonly label: string;
  /** Stops what was started for it (the offline server); a no-op otherwise. */
  close(): Promise<void>;
}

/** The model name used with an API key or `--base-url` when `--model` is not given. */
export const DEFAULT_MODEL = 'gpt-4o-mini';

/**
 * Chooses the model: with `--base-url` (or `OPENAI_BASE_URL`) or an API key
 * (`--api-key`, else `OPENAI_API_KEY`), `openaiChat` (`openaiResponses` with
 * `--responses`) against that endpoint; a base URL without a key gets a
 * placeholder key (local servers ignore it). With neither, it starts the
 * offline model in-process (`LOOPCTL_OFFLINE_DELAY_MS` sets its pace, default
 * 15 ms per chunk) and talks to it through `openaiChat`, the same path as a
 * real provider.
 * @throws UsageError for `--responses` with the offline model (it speaks Chat
 *   Completions only), an `OPENAI_BASE_URL` that is not an http(s) URL (when
 *   `--base-url` does not override it) or a bad `LOOPCTL_OFFLINE_DELAY_MS`.
 */
export async function selectModel(options: CliOptions, env: NodeJS.ProcessEnv): Promise<SelectedModel> {
  const apiKey = options.apiKey ?? (env['OPENAI_API_KEY'] || undefined);
  const envBaseURL = options.baseURL === undefined ? env['OPENAI_BASE_URL'] || undefined : undefined;
  if (envBaseURL !== undefined) checkBaseURL('OPENAI_BASE_URL', envBaseURL);
  const baseURL = options.baseURL ?? envBaseURL;
  if (apiKey !== undefined || baseURL !== undefined) {
    const model = options.model ?? DEFAULT_MODEL;
    const settings = { model, apiKey: apiKey ?? 'not-needed', baseURL };
    const provider = options.responses ? openaiResponses(settings) : openaiChat(settings);
    const api = options.responses ? 'Responses API' : 'Chat Completions';
    return { provider, label: `${model} (${api} at ${baseURL ?? 'api.openai.com'})`, close: async () => undefined };
  }
  if (options.responses)
    throw new UsageError('option --responses needs --base-url or OPENAI_API_KEY: the offline model speaks Chat Completions only');
  const offline = await startOfflineModel({ delayMs: offlineDelay(env) });
  const provider = openaiChat({ model: options.model ?? offline.model, apiKey: 'offline', baseURL: offline.baseURL });
  return {
    provider,
    label: `offline model (rule-based, no AI; set OPENAI_API_KEY or pass --base-url for a real one)`,
    close: () => offline.close(),
  };
}

function offlineDelay(env: NodeJS.ProcessEnv): number {
  const raw = env['LOOPCTL_OFFLINE_DELAY_MS'];
  if (raw === undefined || raw === '') return 15;
  const ms = Number(raw);
  if (!Number.isFinite(ms) || ms < 0) throw new UsageError(`LOOPCTL_OFFLINE_DELAY_MS must be a number of ms >= 0 (got ${JSON.stringify(raw)})`);
  return ms;
}
