import type { Budget, PriceTable } from '../index.js';
import { modelName } from '../tokens/family.js';
import type { CliOptions } from './args.js';
import { UsageError } from './usage-error.js';

/**
 * What `--max-cost` prices a run with (docs/cli.md, "Budgets"): US dollars per million tokens, the vendors' list
 * prices of the CLI's default models (and the offline model, free), as published in 2025. A model not in it has
 * no price: `--max-cost` is refused for it rather than guessed.
 */
export const CLI_PRICES: PriceTable = Object.freeze({
  'loopctl-offline': { input: 0, output: 0 },
  'gpt-4o-mini': { input: 0.15, output: 0.6, cacheRead: 0.075 },
  'gpt-4o': { input: 2.5, output: 10, cacheRead: 1.25 },
  'claude-sonnet-4-5': { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 },
  'gemini-2.5-flash': { input: 0.3, output: 2.5, cacheRead: 0.075 },
});

/** `{ budget }` for a CLI run's options; nothing without `--max-total-tokens` / `--max-cost` ({@link cliBudget}). */
export function budgetOption(
  options: Pick<CliOptions, 'maxTotalTokens' | 'maxCost'>,
  model: { readonly provider: { readonly id: string } },
): { budget?: Budget } {
  const budget = cliBudget(options, model.provider.id);
  return budget === undefined ? {} : { budget };
}

/**
 * The `budget` run option of a CLI run: `--max-total-tokens` and `--max-cost` (the run stops gracefully at the
 * limit, committing what it did: `stopReason: 'budget'`). Undefined without either.
 * @throws UsageError naming `--max-cost` and the model when {@link CLI_PRICES} has no price for `modelId`.
 */
export function cliBudget(
  options: Pick<CliOptions, 'maxTotalTokens' | 'maxCost'>,
  modelId: string,
): Budget | undefined {
  const { maxTotalTokens, maxCost } = options;
  if (maxTotalTokens === undefined && maxCost === undefined) return undefined;
  if (maxCost === undefined) return { maxTotalTokens };
  const name = modelName(modelId);
  if (!Object.hasOwn(CLI_PRICES, name))
    throw new UsageError(
      `option --max-cost: loopctl has no price for the model ${JSON.stringify(name)}; it knows ` +
        `${Object.keys(CLI_PRICES).join(', ')} (use --max-total-tokens to cap tokens instead)`,
    );
  const prices = { [name]: CLI_PRICES[name]! };
  return maxTotalTokens === undefined ? { maxCost, prices } : { maxTotalTokens, maxCost, prices };
}
