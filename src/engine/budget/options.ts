import { ConfigurationError } from '../../errors.js';
import { readProp } from '../../describe.js';

/**
 * What one model costs, per million tokens, in the caller's unit (USD by convention; loopctl never converts):
 * `input` for every input token not read from or written to a prompt cache, `output` per output token,
 * `cacheRead` / `cacheWrite` for the cached ones (default: `input`).
 */
export interface ModelPrice {
  readonly input: number;
  readonly output: number;
  readonly cacheRead?: number;
  readonly cacheWrite?: number;
}

/**
 * Prices by model: a key is a `ModelProvider.id` (`openai:gpt-4o-mini`) or the model's own name (`gpt-4o-mini`,
 * what follows the id's first `:`); the id is looked up first.
 */
export type PriceTable = { readonly [model: string]: ModelPrice };

/**
 * Limits of one run (docs/long-runs.md, "Budgets"), each checked before every model call (what the run used so
 * far plus the estimate of the request: docs/long-runs.md, "Token accounting") and after every response (what
 * the responses reported, sub-runs included). At a limit the run stops at the next boundary: `run_completed`
 * with `stopReason: 'budget'` and the figures in `budget`, committing what it has like a stopped run; with
 * `onLimit: 'cancel'` it is cancelled at once instead (`run_cancelled`, reason `{ type: 'budget', … }`).
 * Invalid fields are a `ConfigurationError` naming `options.budget.<field>`.
 */
export interface Budget {
  /** Input tokens of the run (cached ones included): a positive integer. */
  readonly maxInputTokens?: number;
  /** Output tokens of the run (not a provider's per-request output limit): a positive integer. */
  readonly maxOutputTokens?: number;
  /** Input and output tokens together: a positive integer. */
  readonly maxTotalTokens?: number;
  /** Cost of the run in the unit of `prices` (needs `prices`): a positive number. */
  readonly maxCost?: number;
  /** Prices per model; with them every terminal event carries `cost`. */
  readonly prices?: PriceTable;
  /** `'stop'` (the default): a graceful stop at the next boundary; `'cancel'`: a hard cancel at once. */
  readonly onLimit?: 'stop' | 'cancel';
}

const KEYS = ['maxInputTokens', 'maxOutputTokens', 'maxTotalTokens', 'maxCost', 'prices', 'onLimit'] as const;
const PRICE_KEYS = ['input', 'output', 'cacheRead', 'cacheWrite'] as const;

/** Validates the `budget` run option; returns a plain copy of it (each field read once). */
export function checkBudget(value: unknown, field = 'options.budget'): Budget {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new ConfigurationError(field, 'must be an object of limits (maxTotalTokens, maxCost, …)');
  const b: Record<string, unknown> = {};
  for (const key of Object.keys(value)) {
    if (!(KEYS as readonly string[]).includes(key))
      throw new ConfigurationError(`${field}.${key}`, `is not a budget field (${KEYS.join(', ')})`);
    b[key] = readProp(value, key);
  }
  for (const key of ['maxInputTokens', 'maxOutputTokens', 'maxTotalTokens'] as const) {
    const v = b[key];
    if (v !== undefined && !(Number.isInteger(v) && (v as number) > 0))
      throw new ConfigurationError(`${field}.${key}`, `must be a positive integer of tokens (got ${String(v)})`);
  }
  if (b['maxCost'] !== undefined) {
    if (!positive(b['maxCost']))
      throw new ConfigurationError(`${field}.maxCost`, `must be a positive number (got ${String(b['maxCost'])})`);
    if (b['prices'] === undefined)
      throw new ConfigurationError(`${field}.prices`, 'is needed with maxCost: the price of each model the run uses');
  }
  if (b['prices'] !== undefined) checkPrices(b['prices'], `${field}.prices`);
  if (b['onLimit'] !== undefined && b['onLimit'] !== 'stop' && b['onLimit'] !== 'cancel')
    throw new ConfigurationError(`${field}.onLimit`, `must be 'stop' or 'cancel' (got ${String(b['onLimit'])})`);
  return b as Budget;
}

function checkPrices(prices: unknown, field: string): void {
  if (typeof prices !== 'object' || prices === null || Array.isArray(prices))
    throw new ConfigurationError(field, 'must be an object of prices by model id');
  for (const [model, price] of Object.entries(prices)) {
    const at = `${field}[${JSON.stringify(model)}]`;
    if (typeof price !== 'object' || price === null) throw new ConfigurationError(at, 'must be { input, output }');
    for (const key of Object.keys(price)) {
      if (!(PRICE_KEYS as readonly string[]).includes(key))
        throw new ConfigurationError(`${at}.${key}`, `is not a price field (${PRICE_KEYS.join(', ')})`);
    }
    for (const key of PRICE_KEYS) {
      const v = readProp(price, key);
      const required = key === 'input' || key === 'output';
      if ((v !== undefined || required) && !(typeof v === 'number' && Number.isFinite(v) && v >= 0))
        throw new ConfigurationError(`${at}.${key}`, `must be a price per million tokens >= 0 (got ${String(v)})`);
    }
  }
}

const positive = (v: unknown): boolean => typeof v === 'number' && Number.isFinite(v) && v > 0;
