/**
 * The providers of `--provider` (docs/cli.md, "Providers"): the order the default is chosen in (the first whose key
 * variable is set), each one's key and endpoint variables and default model. How each is built is in `model.ts`;
 * Gemini's adapter is written separately and plugs in there.
 */
export const PROVIDER_NAMES = ['anthropic', 'gemini', 'openai'] as const;
/** One of {@link PROVIDER_NAMES}. */
export type ProviderName = (typeof PROVIDER_NAMES)[number];

/** What the command reads to reach one provider. */
export interface ProviderSettings {
  /** The environment variables of its key, the first set one wins (`--api-key` wins over all). */
  readonly keys: readonly string[];
  /** The environment variable of its endpoint (`--base-url` wins); undefined: none. */
  readonly baseUrlEnv: string | undefined;
  /** `--model` when not given. */
  readonly defaultModel: string;
}

/** Each provider's settings, in {@link PROVIDER_NAMES} order. */
export const PROVIDER_SETTINGS: Readonly<Record<ProviderName, ProviderSettings>> = {
  anthropic: { keys: ['ANTHROPIC_API_KEY'], baseUrlEnv: 'ANTHROPIC_BASE_URL', defaultModel: 'claude-sonnet-4-5' },
  gemini: { keys: ['GEMINI_API_KEY', 'GOOGLE_API_KEY'], baseUrlEnv: undefined, defaultModel: 'gemini-2.5-flash' },
  openai: { keys: ['OPENAI_API_KEY'], baseUrlEnv: 'OPENAI_BASE_URL', defaultModel: 'gpt-4o-mini' },
};
