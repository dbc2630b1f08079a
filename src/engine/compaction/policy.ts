import { readProp } from '../../describe.js';
import { ConfigurationError } from '../../errors.js';
import type { ModelProvider } from '../../model/types.js';

/**
 * The instructions of a summary request when the policy gives none (docs/long-runs.md, "Compaction"). The offline
 * model of the CLI recognises a summary request by them.
 */
export const COMPACTION_INSTRUCTIONS =
  'You compact the conversation above between a user and an AI agent so the agent can go on without it. ' +
  'Write a summary that keeps: every request and constraint of the user, in their words where they matter; ' +
  'the decisions made and why; the files, commands, names and values the work depends on; what was done and ' +
  'what it gave (tool results that matter, errors); and what is left to do. Write plain prose and lists, ' +
  'no preamble, in the language of the conversation.';

/** The `user` message that ends a summary request (after the Items it summarises). */
export const COMPACTION_REQUEST = 'Summarise the conversation so far, as your instructions say.';

/** The defaults of a compaction policy: `threshold` 0.8 of the context window, `keepRecentTurns` 2. */
export const COMPACTION_DEFAULTS = Object.freeze({ threshold: 0.8, keepRecentTurns: 2 });

/**
 * Summary compaction (docs/long-runs.md, "Compaction"): when the next request's estimate passes `threshold` of the
 * model's context window, the Items before the latest `keepRecentTurns` turns are replaced by a summary a model
 * writes.
 */
export interface SummaryCompaction {
  readonly type?: 'summary';
  /** Share of the context window (0 < threshold ≤ 1) the next request's estimate must pass. Default 0.8. */
  readonly threshold?: number;
  /**
   * Latest turns kept word for word (a turn: a model response, its tool results, the user messages before it).
   * Default 2.
   */
  readonly keepRecentTurns?: number;
  /** The model that writes the summary. Default: the agent's model (with its fallback and breaker). */
  readonly model?: ModelProvider;
  /** The summary request's instructions. Default {@link COMPACTION_INSTRUCTIONS}. */
  readonly instructions?: string;
  /**
   * A summary call that fails (after its retries, or with an empty summary): `'fail'` (the default) fails the run
   * with a `CompactionError`; `'truncate'` drops the same Items instead, as the truncation policy does.
   */
  readonly onFailure?: 'fail' | 'truncate';
}

/**
 * Truncation (docs/long-runs.md, "Compaction"): the cheap alternative, no model call: the Items before the latest
 * `keepRecentTurns` turns are left out, named by a summary Item whose text says how many were left out.
 */
export interface TruncateCompaction {
  readonly type: 'truncate';
  /** As for {@link SummaryCompaction}. Default 0.8. */
  readonly threshold?: number;
  /** As for {@link SummaryCompaction}. Default 2. */
  readonly keepRecentTurns?: number;
}

/** An agent's `compaction` option: {@link SummaryCompaction} or {@link TruncateCompaction}. */
export type CompactionPolicy = SummaryCompaction | TruncateCompaction;

/** A checked policy with its defaults filled in. */
export interface Compaction {
  readonly type: 'summary' | 'truncate';
  readonly threshold: number;
  readonly keepRecentTurns: number;
  readonly model: ModelProvider | undefined;
  readonly instructions: string;
  readonly onFailure: 'fail' | 'truncate';
}

const SUMMARY_KEYS = ['type', 'threshold', 'keepRecentTurns', 'model', 'instructions', 'onFailure'];
const TRUNCATE_KEYS = ['type', 'threshold', 'keepRecentTurns'];

/**
 * Validates an agent's `compaction` option; returns it with its defaults. Throws `ConfigurationError` naming
 * `agent.compaction.<field>`.
 */
export function checkCompaction(value: unknown, field = 'agent.compaction'): Compaction {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new ConfigurationError(
      field,
      "must be an object ({ threshold?, keepRecentTurns?, … } or { type: 'truncate' })",
    );
  const type = readProp(value, 'type');
  if (type !== undefined && type !== 'summary' && type !== 'truncate')
    throw new ConfigurationError(`${field}.type`, `must be 'summary' or 'truncate' (got ${String(type)})`);
  const keys = type === 'truncate' ? TRUNCATE_KEYS : SUMMARY_KEYS;
  for (const key of Object.keys(value)) {
    if (!keys.includes(key))
      throw new ConfigurationError(`${field}.${key}`, `is not a field of this policy (${keys.join(', ')})`);
  }
  const threshold = readProp(value, 'threshold') ?? COMPACTION_DEFAULTS.threshold;
  if (typeof threshold !== 'number' || !(threshold > 0 && threshold <= 1))
    throw new ConfigurationError(
      `${field}.threshold`,
      `must be a share of the window, 0 < threshold ≤ 1 (got ${String(threshold)})`,
    );
  const keep = readProp(value, 'keepRecentTurns') ?? COMPACTION_DEFAULTS.keepRecentTurns;
  if (!Number.isInteger(keep) || (keep as number) < 1)
    throw new ConfigurationError(`${field}.keepRecentTurns`, `must be a positive integer (got ${String(keep)})`);
  const model = readProp(value, 'model') as ModelProvider | undefined;
  if (
    model !== undefined &&
    (typeof model !== 'object' || model === null || typeof model.id !== 'string' || typeof model.call !== 'function')
  )
    throw new ConfigurationError(`${field}.model`, 'must be a ModelProvider ({ id: string; call(request) })');
  const instructions = readProp(value, 'instructions') ?? COMPACTION_INSTRUCTIONS;
  if (typeof instructions !== 'string' || instructions === '')
    throw new ConfigurationError(`${field}.instructions`, 'must be a non-empty string');
  const onFailure = readProp(value, 'onFailure') ?? 'fail';
  if (onFailure !== 'fail' && onFailure !== 'truncate')
    throw new ConfigurationError(`${field}.onFailure`, `must be 'fail' or 'truncate' (got ${String(onFailure)})`);
  return Object.freeze({
    type: type === 'truncate' ? 'truncate' : 'summary',
    threshold,
    keepRecentTurns: keep as number,
    model,
    instructions,
    onFailure,
  });
}
