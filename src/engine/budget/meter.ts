import type { BudgetFigures, BudgetReason, Cost, RunEventDraft } from '../../events.js';
import { isTerminalEvent } from '../../events.js';
import type { TokenCounts, Usage } from '../../items.js';
import type { ModelProvider, ModelRequest } from '../../model/types.js';
import { contextWindowOf } from '../../tokens/context-windows.js';
import { estimateInputTokens, InputCalibration } from '../../tokens/estimate.js';
import { familyOf, modelName, type ProviderFamily } from '../../tokens/family.js';
import type { Fact } from '../totals.js';
import type { Budget, ModelPrice } from './options.js';

/**
 * The estimate of one request's input tokens (docs/long-runs.md, "Token accounting"): `inputTokens` calibrated by
 * the run's last measured ratio, `raw` before it, the model's `family` and its `contextWindow` (the agent's
 * override, else the table's; undefined when unknown).
 */
export interface RequestEstimate {
  readonly inputTokens: number;
  readonly raw: number;
  readonly family: ProviderFamily;
  readonly contextWindow: number | undefined;
}

const MILLION = 1_000_000;

/**
 * A run's token accounting and budget (one per run, fed by the controller's `emit`): the cost of its responses
 * by the model of each (when the budget has `prices`), the calibration of its estimates against the input
 * tokens each response reports, and the checks of its limits, before a call and after a response.
 */
export class BudgetMeter {
  readonly calibration = new InputCalibration();
  /** True when the budget has at least one limit. */
  readonly limited: boolean;
  /** True when a limit hard-cancels (`onLimit: 'cancel'`). */
  readonly cancels: boolean;
  #amount = 0;
  #complete = true;
  /** The model of the attempt in flight (`model_request_started.model`), and the same per sub-run path. */
  #model = '';
  #subModels: Map<string, string> | undefined; // made at a sub-run's first request
  /** The raw estimate of the request sent last, for the calibration; 0 when none was made. */
  #raw = 0;

  constructor(
    readonly budget: Budget | undefined,
    private readonly contextWindow: number | undefined,
  ) {
    const b = budget ?? {};
    this.limited = [b.maxInputTokens, b.maxOutputTokens, b.maxTotalTokens, b.maxCost].some((v) => v !== undefined);
    this.cancels = this.limited && b.onLimit === 'cancel';
  }

  /**
   * A resumed run's usage from before its suspension (docs/long-runs.md, "Budgets"): no response of this run priced
   * it and the suspension keeps no cost, so the cost is incomplete once it holds any.
   */
  carried(usage: Usage): void {
    if (usage.totalTokens > 0 || !usage.reported) this.#complete = false;
  }

  /** The run's cost so far, when the budget has prices; undefined otherwise. */
  cost(): Cost | undefined {
    return this.budget?.prices === undefined ? undefined : { amount: this.#amount, complete: this.#complete };
  }

  /** The estimate of `request` to `model`; the raw one is kept for the calibration when the response reports. */
  estimate(request: Omit<ModelRequest, 'stream'>, model: ModelProvider): RequestEstimate {
    const family = familyOf(model.id);
    const raw = estimateInputTokens(request, family);
    this.#raw = raw;
    const contextWindow = contextWindowOf(model.id, this.contextWindow);
    return { inputTokens: this.calibration.apply(raw), raw, family, contextWindow };
  }

  /** Folds one event the run stamps (after the totals): the cost, the calibration. */
  observe(draft: RunEventDraft, fact: Fact | undefined): void {
    if (fact?.billed !== undefined) this.#price(this.#model, fact.billed);
    switch (draft.type) {
      case 'model_request_started':
        this.#model = draft.model;
        return;
      case 'model_response_completed':
        this.#price(this.#model, draft.usage.reported ? draft.usage : undefined);
        if (draft.usage.reported && this.#raw > 0) this.calibration.measure(this.#raw, draft.usage.inputTokens);
        return;
      case 'subrun_event': {
        const key = draft.path.join('\u0000');
        const inner = draft.event;
        if (inner.type === 'model_request_started') (this.#subModels ??= new Map()).set(key, inner.model);
        else if (inner.type === 'model_response_completed')
          this.#price(this.#subModels?.get(key) ?? '', inner.usage.reported ? inner.usage : undefined);
        else if (isTerminalEvent(inner)) this.#subModels?.delete(key);
        return;
      }
      default:
        return;
    }
  }

  /** The limit the run's `usage` (and cost) reached, if any: a limit is reached at `used >= max`. */
  reached(usage: Usage): BudgetFigures | undefined {
    return this.#check(usage, 0, 0);
  }

  /**
   * The limit the next request would pass, if any: what was used plus the request's estimated input tokens (and
   * their cost at `model`'s input price) over a limit, or a limit already reached.
   */
  wouldPass(usage: Usage, estimate: number, modelId: string): BudgetFigures | undefined {
    const price = this.#priceOf(modelId);
    return this.#check(usage, estimate, price === undefined ? 0 : (estimate * price.input) / MILLION);
  }

  #check(usage: Usage, tokens: number, cost: number): BudgetFigures | undefined {
    const b = this.budget;
    if (b === undefined || !this.limited) return undefined;
    const over = (limit: BudgetFigures['limit'], max: number | undefined, used: number, add: number) => {
      if (max === undefined) return undefined;
      if (add === 0 ? used >= max : used + add > max) {
        return add === 0 ? { limit, max, used } : { limit, max, used, estimate: add };
      }
      return undefined;
    };
    return (
      over('maxInputTokens', b.maxInputTokens, usage.inputTokens, tokens) ??
      over('maxTotalTokens', b.maxTotalTokens, usage.totalTokens, tokens) ??
      over('maxOutputTokens', b.maxOutputTokens, usage.outputTokens, 0) ??
      over('maxCost', b.maxCost, this.#amount, cost)
    );
  }

  #priceOf(modelId: string): ModelPrice | undefined {
    const prices = this.budget?.prices;
    if (prices === undefined) return undefined;
    if (Object.hasOwn(prices, modelId)) return prices[modelId];
    const name = modelName(modelId);
    return Object.hasOwn(prices, name) ? prices[name] : undefined;
  }

  #price(modelId: string, usage: TokenCounts | Usage | undefined): void {
    if (this.budget?.prices === undefined) return;
    const price = this.#priceOf(modelId);
    if (usage === undefined || price === undefined) {
      this.#complete = false;
      return;
    }
    this.#amount += costOf(price, usage);
  }
}

/**
 * The run's meter when its `budget` option has a limit, else undefined, without making the meter of a run that has
 * no `budget` (its controller makes it on first use: BENCHMARKS.md, memory).
 */
export function limitsOf(rc: {
  readonly opts: { readonly budget?: Budget | undefined };
  readonly meter: BudgetMeter;
}): BudgetMeter | undefined {
  if (rc.opts.budget === undefined) return undefined;
  const { meter } = rc;
  return meter.limited ? meter : undefined;
}

/** What `usage` costs at `price` (per million tokens): cached input at the cache prices (default: `input`). */
export function costOf(price: ModelPrice, usage: TokenCounts | Usage): number {
  const read = usage.cacheReadTokens ?? 0;
  const write = usage.cacheWriteTokens ?? 0;
  const uncached = Math.max(0, usage.inputTokens - read - write);
  const input =
    uncached * price.input + read * (price.cacheRead ?? price.input) + write * (price.cacheWrite ?? price.input);
  return (input + usage.outputTokens * price.output) / MILLION;
}

/** The cancel reason of a budget limit with `onLimit: 'cancel'`: `{ type: 'budget', …figures }`. */
export function budgetReason(figures: BudgetFigures): BudgetReason {
  return { type: 'budget', ...figures };
}
