/**
 * The recovery chain is built once per agent and shared by all of its runs (src/engine/model-call.ts): each model
 * call carries its run's context, retry policy, jitter and deadlines. A property over interleavings: many runs of
 * ONE agent, started at different virtual times, each with its own plan of model outcomes (success, a retryable
 * failure with or without `retry-after`, a stream that breaks after its first delta and is rescued, a silent
 * request ended by the first-event deadline, a tool call), its own retry policy and jitter, and its own end (none,
 * a CancelSignal fired mid-run, an unsubscribe, a `runMs` deadline). Each run's events, as seen by its own
 * subscriber at their virtual times, must be exactly what the same run shows when it runs alone: no attempt count,
 * backoff delay, retry-after, usage, phase or event of one run shows in another, and no cancel of one run touches
 * another.
 */
import fc from 'fast-check';
import { Observable, VirtualTimeScheduler, type Subscription } from 'rxjs';
import { afterAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  CancelSignal,
  ModelCallError,
  defineAgent,
  run,
  tool,
  type Agent,
  type ModelEvent,
  type ModelProvider,
  type ModelRequest,
  type RunEvent,
} from '../src/index.js';
import { checkProperty } from './support/check-property.js';

/** What one attempt of a run's model call does, in the run's plan (taken in order, one per request). */
type Outcome =
  | { readonly kind: 'ok'; readonly afterMs: number; readonly tokens: number }
  | { readonly kind: 'tool'; readonly afterMs: number }
  | { readonly kind: 'fail'; readonly afterMs: number; readonly retryAfterMs?: number }
  | { readonly kind: 'broke'; readonly afterMs: number }
  /** A whole response, then a retryable failure: the attempt was billed. */
  | { readonly kind: 'billed'; readonly afterMs: number }
  | { readonly kind: 'silent' };

/** How a run ends if its plan has not ended it first. */
type End = { readonly by: 'none' } | { readonly by: 'cancel' | 'unsubscribe' | 'runMs'; readonly atMs: number };

interface Plan {
  readonly startAt: number;
  readonly outcomes: readonly Outcome[];
  readonly maxRetries: number;
  readonly initialDelayMs: number;
  readonly jitter: number;
  /** The run's `deadlines.firstEventMs` and `retry.maxRetryAfterMs`: a retry-after above it fails at once. */
  readonly firstEventMs: number;
  readonly maxRetryAfterMs: number;
  /** The run's `budget.maxTotalTokens`, when it has one. */
  readonly maxTotalTokens: number | undefined;
  readonly end: End;
}

const outcome: fc.Arbitrary<Outcome> = fc.oneof(
  {
    arbitrary: fc.record({
      kind: fc.constant('ok' as const),
      afterMs: fc.integer({ min: 0, max: 300 }),
      tokens: fc.nat(50),
    }),
    weight: 2,
  },
  {
    arbitrary: fc.record({ kind: fc.constant('tool' as const), afterMs: fc.integer({ min: 0, max: 300 }) }),
    weight: 2,
  },
  {
    arbitrary: fc.record(
      {
        kind: fc.constant('fail' as const),
        afterMs: fc.integer({ min: 0, max: 300 }),
        retryAfterMs: fc.integer({ min: 0, max: 1_500 }),
      },
      { requiredKeys: ['kind', 'afterMs'] },
    ),
    weight: 4,
  },
  {
    arbitrary: fc.record({
      kind: fc.constantFrom('broke' as const, 'billed' as const),
      afterMs: fc.integer({ min: 0, max: 300 }),
    }),
    weight: 2,
  },
  { arbitrary: fc.constant({ kind: 'silent' as const }), weight: 1 },
);

const end: fc.Arbitrary<End> = fc.oneof(
  fc.constant({ by: 'none' as const }),
  fc.record({
    by: fc.constantFrom('cancel' as const, 'unsubscribe' as const, 'runMs' as const),
    atMs: fc.integer({ min: 1, max: 2_000 }),
  }),
);

const plan: fc.Arbitrary<Plan> = fc.record({
  startAt: fc.integer({ min: 0, max: 1_000 }),
  outcomes: fc.array(outcome, { minLength: 1, maxLength: 6 }),
  maxRetries: fc.integer({ min: 0, max: 3 }),
  initialDelayMs: fc.integer({ min: 1, max: 800 }),
  jitter: fc.double({ min: 0, max: 1, noNaN: true }),
  firstEventMs: fc.integer({ min: 100, max: 400 }),
  maxRetryAfterMs: fc.integer({ min: 200, max: 1_500 }),
  maxTotalTokens: fc.option(fc.integer({ min: 1, max: 200 }), { nil: undefined }),
  end,
});

/**
 * One model for all the runs: the run is named by its input (`run-<k>`), and each request of run k takes the next
 * outcome of k's plan (a run that used its plan up is answered with a non-retryable failure).
 */
function plannedModel(plans: readonly Plan[], scheduler: VirtualTimeScheduler) {
  const taken = new Map<number, number>();
  const model: ModelProvider = {
    id: 'planned',
    call(request: ModelRequest): Observable<ModelEvent> {
      const first = request.items[0];
      const k = Number(first?.type === 'user' ? first.text.slice('run-'.length) : NaN);
      const n = taken.get(k) ?? 0;
      taken.set(k, n + 1);
      const step = plans[k]!.outcomes[n];
      return new Observable<ModelEvent>((subscriber) => {
        if (step === undefined) {
          subscriber.error(new ModelCallError(`run-${k}: plan used up`, { status: 400, retryable: false }));
          return;
        }
        if (step.kind === 'silent') return;
        return scheduler.schedule(() => {
          const text = `run-${k} answer ${n}`;
          if (step.kind === 'fail') {
            const retryAfter = step.retryAfterMs !== undefined ? { retryAfterMs: step.retryAfterMs } : {};
            subscriber.error(new ModelCallError(`run-${k} busy ${n}`, { status: 429, retryable: true, ...retryAfter }));
            return;
          }
          if (request.stream) subscriber.next({ type: 'text_delta', delta: text });
          if (step.kind === 'broke') {
            if (request.stream) {
              subscriber.error(new ModelCallError(`run-${k} cut ${n}`, { retryable: true, streamStarted: true }));
              return;
            }
          }
          const toolCalls =
            step.kind === 'tool' ? [{ callId: `c-${k}-${n}`, name: 'echo', arguments: JSON.stringify({ n }) }] : [];
          const tokens = step.kind === 'ok' ? step.tokens : 1;
          subscriber.next({
            type: 'response',
            response: {
              text,
              toolCalls,
              finishReason: toolCalls.length > 0 ? 'tool_calls' : 'stop',
              usage: { inputTokens: 10 * (k + 1), outputTokens: tokens, totalTokens: 10 * (k + 1) + tokens },
            },
          });
          if (step.kind === 'billed') {
            subscriber.error(new ModelCallError(`run-${k} lost ${n}`, { retryable: true }));
            return;
          }
          subscriber.complete();
        }, step.afterMs);
      });
    },
  };
  return model;
}

const echo = tool({
  name: 'echo',
  description: 'Echoes n',
  parameters: z.object({ n: z.number() }),
  execute: ({ n }) => `echo ${n}`,
});

const agentOn = (model: ModelProvider): Agent =>
  defineAgent({ name: 'shared', instructions: '', model, tools: [echo] });

/** What a run's subscriber saw, in words a failure message can show: time since its start, then the event. */
function seen(e: RunEvent, at: number): string {
  const fields: Record<string, unknown> = e as unknown as Record<string, unknown>;
  const parts = [`${at}`, e.type];
  for (const key of ['attempt', 'delayMs', 'cause', 'phase', 'stopReason', 'delta', 'model', 'budget']) {
    if (fields[key] !== undefined) parts.push(`${key}=${JSON.stringify(fields[key])}`);
  }
  const error = fields['error'] as { message?: string } | undefined;
  if (error?.message !== undefined) parts.push(`error=${error.message}`);
  const reason = fields['reason'];
  if (reason !== undefined) parts.push(`reason=${JSON.stringify(reason)}`);
  const usage = fields['usage'];
  if (usage !== undefined) parts.push(`usage=${JSON.stringify(usage)}`);
  return parts.join(' ');
}

/**
 * Runs the runs `which` of `plans` on one fresh virtual clock, each started at its `startAt` and ended as its plan
 * says, until nothing is left scheduled. @returns what each run's subscriber saw, and the virtual actions left.
 */
function runAll(agent: Agent, plans: readonly Plan[], which: readonly number[], scheduler: VirtualTimeScheduler) {
  const traces = new Map<number, string[]>();
  for (const k of which) {
    const p = plans[k]!;
    const trace: string[] = [];
    traces.set(k, trace);
    const cancel = new CancelSignal();
    scheduler.schedule(() => {
      const startedAt = scheduler.now();
      const sub: Subscription = run(agent, `run-${k}`, {
        scheduler,
        random: () => p.jitter,
        retry: { maxRetries: p.maxRetries, initialDelayMs: p.initialDelayMs, maxRetryAfterMs: p.maxRetryAfterMs },
        deadlines: { firstEventMs: p.firstEventMs, ...(p.end.by === 'runMs' ? { runMs: p.end.atMs } : {}) },
        cancel,
        ...(p.maxTotalTokens !== undefined ? { budget: { maxTotalTokens: p.maxTotalTokens } } : {}),
      }).subscribe({
        next: (e) => trace.push(seen(e, scheduler.now() - startedAt)),
        error: (err: unknown) => trace.push(`error ${String(err)}`),
      });
      const { end: stop } = p;
      if (stop.by === 'cancel') scheduler.schedule(() => cancel.cancel(`stop run-${k}`), stop.atMs);
      if (stop.by === 'unsubscribe') {
        scheduler.schedule(() => {
          trace.push(`${scheduler.now() - startedAt} unsubscribed`);
          sub.unsubscribe();
        }, stop.atMs);
      }
    }, p.startAt);
  }
  scheduler.flush();
  return { traces, left: scheduler.actions.length };
}

let cases = 0;
let runsChecked = 0;
const kinds = new Set<string>();
afterAll(() => {
  console.info(
    `shared recovery chain: ${cases} interleavings of ${runsChecked} runs of one agent checked against each run ` +
      `alone; seen: ${[...kinds].sort().join(', ')}`,
  );
});

describe('the recovery chain an agent shares between its runs', () => {
  it('concurrent runs of one agent each show exactly what they show alone (retries, backoff, rescue, deadlines, cancels)', () => {
    checkProperty(
      fc.property(fc.array(plan, { minLength: 2, maxLength: 6 }), (plans) => {
        const all = plans.map((_, k) => k);
        const together = new VirtualTimeScheduler();
        const agent = agentOn(plannedModel(plans, together));
        const concurrent = runAll(agent, plans, all, together);
        expect(concurrent.left).toBe(0);
        for (const k of all) {
          const alone = new VirtualTimeScheduler();
          const soloAgent = agentOn(plannedModel(plans, alone));
          const solo = runAll(soloAgent, plans, [k], alone);
          expect(concurrent.traces.get(k), `run-${k} together vs alone`).toEqual(solo.traces.get(k));
          for (const line of solo.traces.get(k)!) {
            kinds.add(line.split(' ')[1]!);
            for (const [, what] of line.matchAll(/ ((?:cause|phase|stopReason)="\w+")/g)) kinds.add(what!);
            if (process.env.DBG) console.log(line);
          }
        }
        cases++;
        runsChecked += plans.length;
      }),
      150,
      'test/recovery-shared-chain-isolated.test.ts',
    );
  });
});
