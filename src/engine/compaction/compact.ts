import { EMPTY, catchError, concatMap, defer, from, type Observable } from 'rxjs';
import { stage } from '../../cancel/stage.js';
import { CompactionError, isCompactionError, serializeError } from '../../errors.js';
import type { CompactionCompleted, CompactionStarted, RunEventDraft } from '../../events.js';
import { ZERO_USAGE, addUsage, type Item, type SummaryItem, type Usage } from '../../items.js';
import type { ModelRequest, ModelResponse } from '../../model/types.js';
import { contextWindowOf } from '../../tokens/context-windows.js';
import type { RequestEstimate } from '../budget/meter.js';
import { ModelCalls } from '../model-call.js';
import type { RecoveryContext } from '../recovery/types.js';
import { buildRequest } from '../request.js';
import type { Outcome, RunContext } from '../run-context.js';
import { budgetEnd } from '../stop.js';
import type { Agent } from '../types.js';
import { stageAt } from '../waits.js';
import { compactedView, coverId, sendable } from './apply.js';
import { cutIndex } from './cut.js';
import { COMPACTION_REQUEST, checkCompaction, type Compaction } from './policy.js';

/**
 * What a compaction needs of a run's turns: the run, its loaded history, its model calls (whose ledger of billed
 * usage the summary calls share) and (made once) its summary calls.
 */
export interface CompactionTurns {
  readonly rc: RunContext<any>;
  readonly history: readonly Item[];
  readonly models: ModelCalls;
  summaries?: ModelCalls;
}

type Draft<T> = Omit<T, 'runId' | 'seq' | 'turn' | 'at'>;
type Mutable<T> = { -readonly [K in keyof T]: T[K] };

const policies = new WeakMap<Agent<any>, Compaction>();

/** The agent's compaction policy with its defaults (checked once per agent), or undefined without one. */
export function compactionOf(agent: Agent<any>): Compaction | undefined {
  if (agent.compaction === undefined) return undefined;
  let policy = policies.get(agent);
  if (policy === undefined) policies.set(agent, (policy = checkCompaction(agent.compaction)));
  return policy;
}

/**
 * Compaction before a turn's request (docs/long-runs.md, "Compaction"): when the estimate of the request the
 * engine would build passes `threshold` of the model's context window, {@link compact$} with cause `threshold`.
 * Completes at once when it does not (or the window is unknown, or there is nothing older to cover). Emits the
 * run's outcome when the budget's check before the summary call ends the run instead ({@link compact$}).
 */
export function compactIfDue$(turns: CompactionTurns, policy: Compaction): Observable<Outcome> {
  return defer(() => {
    const { rc } = turns;
    // A model with no known window is compacted only by a provider's context-length error: nothing to estimate.
    if (contextWindowOf(rc.agent.model.id, rc.agent.contextWindow) === undefined) return EMPTY;
    const estimate = rc.meter.estimate(buildRequest(rc, turns.history), rc.agent.model);
    const window = estimate.contextWindow;
    if (window === undefined || estimate.inputTokens <= policy.threshold * window) return EMPTY;
    return compact$(turns, policy, 'threshold', estimate) ?? EMPTY;
  });
}

/**
 * One compaction, or undefined when the history has nothing older than the turns kept to cover. A wait at
 * `compaction` (a new checkpoint: docs/cancellation.md) from its start to its end: a stage emits
 * `compaction_started`; for a summary, the model call follows (the agent's model or the policy's, with the
 * engine's retries, rescue, breaker and deadlines; its text is not streamed to the run), then a stage adds the
 * summary Item (`compaction_completed`), so a cancel in the same tick as the summary's arrival wins and nothing is
 * replaced. A truncation adds its Item at once. A failed summary fails the run with a `CompactionError`
 * (`onFailure: 'fail'`) or truncates instead (`'truncate'`); the usage its responses billed (an empty summary's
 * included) goes to the run's ledger, so the run's usage counts it either way.
 *
 * The summary call passes the budget's check before a model call first (docs/long-runs.md, "Budgets"): when what
 * the run used plus the summary request's estimate passes a limit, nothing starts and nothing is sent; the run's
 * budget outcome is emitted (`onLimit: 'stop'`), or its token is cancelled (`'cancel'`) and nothing is emitted.
 */
export function compact$(
  turns: CompactionTurns,
  policy: Compaction,
  cause: CompactionStarted['cause'],
  before: RequestEstimate,
): Observable<Outcome> | undefined {
  const { rc } = turns;
  const view = compactedView(turns.history.concat(rc.totals.scratch.items));
  const cut = cutIndex(view, policy.keepRecentTurns);
  if (cut === undefined) return undefined;
  const covered = view.slice(0, cut);
  const kept = view.slice(cut);
  const covers = covered.flatMap((item) => coverId(item) ?? []);
  const started: Mutable<Draft<CompactionStarted>> = {
    type: 'compaction_started',
    cause,
    strategy: policy.type,
    tokensBefore: before.inputTokens,
    items: covered.length,
  };
  if (before.contextWindow !== undefined) started.contextWindow = before.contextWindow;
  const complete = (
    text: string,
    strategy: CompactionCompleted['strategy'],
    extra: Partial<Draft<CompactionCompleted>>,
  ) => {
    const summary: SummaryItem = { type: 'summary', id: rc.nextId(), text, covers };
    const request = { ...buildRequest(rc, turns.history), items: sendable([summary, ...kept]) };
    const after = rc.meter.estimate(request, rc.agent.model);
    const draft: Draft<CompactionCompleted> = {
      type: 'compaction_completed',
      strategy,
      summaryId: summary.id,
      items: covered.length,
      tokensBefore: before.inputTokens,
      tokensAfter: after.inputTokens,
      ...extra,
    };
    rc.emit(draft as RunEventDraft, extra.usage !== undefined ? { summary, billed: extra.usage } : { summary });
  };
  const truncated = (count: number) => `(${count} earlier messages were left out to fit the context window.)`;
  if (policy.type === 'truncate') {
    return stageAt(rc, 'compaction', () => {
      rc.emit(started as RunEventDraft);
      complete(truncated(covered.length), 'truncate', {});
      return EMPTY;
    });
  }
  const summarizer = policy.model ?? rc.agent.model;
  const modelId = summarizer.id;
  const request: Omit<ModelRequest, 'stream'> = {
    instructions: policy.instructions,
    items: [...sendable(covered), { type: 'user', id: 'compaction-request', text: COMPACTION_REQUEST }],
    tools: [],
  };
  if (rc.meter.limited) {
    const estimate = rc.meter.estimate(request, summarizer);
    const over = rc.meter.wouldPass(rc.totals.usage, estimate.inputTokens, modelId);
    if (over !== undefined) return from(budgetEnd(rc, over));
  }
  const ledger = turns.models.ledger;
  return stageAt(rc, 'compaction', () => {
    rc.emit(started as RunEventDraft);
    return summaryCalls(turns)
      .call(request, policy.model)
      .pipe(
        concatMap((response: ModelResponse) => {
          const usage: Usage = addUsage(ZERO_USAGE, response.usage);
          const text = response.text.trim();
          return stage(
            rc.token,
            (): Observable<never> => {
              if (text === '') {
                // Billed all the same: the run's failure (or the truncation instead) reports it.
                ledger.billed = addUsage(ledger.billed ?? ZERO_USAGE, response.usage);
                throw new CompactionError(modelId, undefined);
              }
              complete(text, 'summary', { usage });
              return EMPTY;
            },
            rc.hopScheduler,
          );
        }),
        catchError((err: unknown) => {
          const error = isCompactionError(err) ? err : new CompactionError(modelId, err);
          if (policy.onFailure !== 'truncate') throw error;
          return stage(
            rc.token,
            (): Observable<never> => {
              const billed = turns.models.takeBilled();
              const extra = { error: serializeError(error), ...(billed !== undefined ? { usage: billed } : {}) };
              complete(truncated(covered.length), 'truncate', extra);
              return EMPTY;
            },
            rc.hopScheduler,
          );
        }),
      );
  });
}

/** The run's summary calls, made once: the engine's recovery, events to the run but the summary's text. */
function summaryCalls(turns: CompactionTurns): ModelCalls {
  const { rc } = turns;
  if (turns.summaries !== undefined) return turns.summaries;
  const ctx: RecoveryContext = {
    get token() {
      return rc.token;
    },
    get hopScheduler() {
      return rc.hopScheduler;
    },
    get waits() {
      return rc.waits;
    },
    get scheduler() {
      return rc.scheduler;
    },
    emit: (draft, fact) => {
      // The summary is not the agent's answer: its text stays out of the run's text (and its partial).
      if (draft.type === 'text_delta' || draft.type === 'output_delta') return;
      rc.emit(draft, fact);
    },
  };
  return (turns.summaries = new ModelCalls(rc, ctx, turns.models.ledger));
}
