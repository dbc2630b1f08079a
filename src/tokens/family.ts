/**
 * A provider family: who speaks the wire a model id names, so its tokens are counted (and its context window
 * and prices looked up) the way that family counts them. `'other'` for a model id loopctl cannot place.
 */
export type ProviderFamily = 'openai' | 'anthropic' | 'gemini' | 'other';

/**
 * The family of a `ModelProvider.id`: by its prefix (`openai:…`, `openai-responses:…`, `anthropic:…`,
 * `gemini:…`, `google:…`), else by the model's name (`gpt-…`, `o1`/`o3`/`o4…`, `claude-…`, `gemini-…`), else
 * `'other'`.
 */
export function familyOf(modelId: string): ProviderFamily {
  const colon = modelId.indexOf(':');
  const prefix = colon === -1 ? '' : modelId.slice(0, colon).toLowerCase();
  if (prefix.startsWith('openai')) return 'openai';
  if (prefix.startsWith('anthropic')) return 'anthropic';
  if (prefix.startsWith('gemini') || prefix.startsWith('google')) return 'gemini';
  const name = modelName(modelId).toLowerCase();
  if (/^(gpt-|o\d|chatgpt-)/.test(name)) return 'openai';
  if (name.startsWith('claude')) return 'anthropic';
  if (name.startsWith('gemini')) return 'gemini';
  return 'other';
}

/** The model's own name in a provider id: what follows the first `:` (`openai:gpt-4o` → `gpt-4o`), or the id. */
export function modelName(modelId: string): string {
  const colon = modelId.indexOf(':');
  return colon === -1 ? modelId : modelId.slice(colon + 1);
}
