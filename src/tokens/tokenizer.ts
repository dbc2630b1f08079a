import type { ProviderFamily } from './family.js';

/** Counts the tokens of one text in a family's own encoding. */
export type TokenCounter = (text: string) => number;

/**
 * The tokenizer library of each family that has a well-kept one, as the module that counts: OpenAI's o200k_base
 * encoding (GPT-4o, GPT-4.1, GPT-5, the o-series) from `gpt-tokenizer` (an optional peer dependency, pure
 * JavaScript, no network). Anthropic and Gemini publish no local tokenizer: their estimates stay the fallback.
 */
export const TOKENIZER_MODULES: Readonly<Partial<Record<ProviderFamily, string>>> = Object.freeze({
  openai: 'gpt-tokenizer/encoding/o200k_base',
});

const counters = new Map<ProviderFamily, TokenCounter>();
const loads = new Map<ProviderFamily, Promise<boolean>>();

/**
 * Loads `family`'s tokenizer library once per process (a dynamic import; later calls return the same promise).
 * Resolves true when it is loaded: from then on `estimateInputTokens` counts that family's requests with it (the
 * calibration still applies). Resolves false, never rejects, when the family has none or the library cannot be
 * loaded (not installed): the estimate stays the documented fallback. Nothing loads it but this call.
 *
 * @example
 * await loadTokenizer('openai'); // true when gpt-tokenizer is installed
 */
export function loadTokenizer(family: ProviderFamily): Promise<boolean> {
  let loading = loads.get(family);
  if (loading === undefined) {
    loading = importCounter(family).then((count) => {
      if (count !== undefined) counters.set(family, count);
      return count !== undefined;
    });
    loads.set(family, loading);
  }
  return loading;
}

/** The loaded tokenizer of `family` ({@link loadTokenizer}), or undefined: the fallback estimate applies. */
export function tokenCounter(family: ProviderFamily): TokenCounter | undefined {
  return counters.get(family);
}

async function importCounter(family: ProviderFamily): Promise<TokenCounter | undefined> {
  const specifier = TOKENIZER_MODULES[family];
  if (specifier === undefined) return undefined;
  let library: { countTokens?: unknown };
  try {
    // A specifier held in a variable: bundlers leave the optional library out, and the core stays isomorphic.
    library = (await import(/* @vite-ignore */ specifier)) as { countTokens?: unknown };
  } catch {
    return undefined;
  }
  const countTokens = library?.countTokens;
  if (typeof countTokens !== 'function') return undefined;
  // Special-token text in a message (`<|endoftext|>`) is sent as plain text, so it is counted as plain text.
  const options = { disallowedSpecial: new Set<string>() };
  return (text) => (countTokens as (text: string, options: object) => number)(text, options);
}
