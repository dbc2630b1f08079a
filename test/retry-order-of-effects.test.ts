import { Observable, asapScheduler, asyncScheduler, retry, throwError, timer, type Subscription } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { describe, expect, it } from 'vitest';
import { CancelSignal } from '../src/cancel/cancel-signal.js';
import { ModelCallError, isModelCallError, serializeError } from '../src/errors.js';
import type { RunEventDraft } from '../src/events.js';
import type { ModelResponse } from '../src/model/types.js';
import { backoffDelay, retryAfterTooLong, retryPolicy, type RetryPolicy } from '../src/engine/recovery/backoff.js';
import { retryTransient } from '../src/engine/recovery/retry-transient.js';
import {
  FIRST_ATTEMPT,
  billedFact,
  isRetryable,
  type AttemptCause,
  type Attempts,
  type ModelCall,
  type RecoveryContext,
  type RecoveryOperator,
} from '../src/engine/recovery/types.js';
import { Waits, stageAt, type Wait } from '../src/engine/waits.js';
import type { CancelPhase } from '../src/events.js';

/**
 * The retry as it was written with RxJS's own `retry` (before the hand-written one): the reference whose order of
 * effects the hand-written `retryTransient` keeps. Its retry-after error has another message (the log compares an
 * error's name and status).
 */
function rxjsRetryTransient(ctx: RecoveryContext, policy: RetryPolicy, random: () => number): RecoveryOperator {
  return (attempts) => (call, why) => {
    let next: AttemptCause = why;
    const attempt$ = new Observable<ModelResponse>((subscriber) => attempts(call, next).subscribe(subscriber));
    return attempt$.pipe(
      retry({
        count: policy.maxRetries,
        delay: (err: unknown, retryCount: number) => {
          if (!isRetryable(err)) return throwError(() => err);
          const retryAfterMs = isModelCallError(err) ? err.retryAfterMs : undefined;
          if (retryAfterTooLong(policy, retryAfterMs))
            return throwError(() => new ModelCallError('too long', { status: 429 }));
          const delayMs = backoffDelay(policy, retryCount, random, retryAfterMs);
          return stageAt(ctx, 'backoff', () => {
            next = { cause: 'retry', error: err };
            const attempt = call.attempts + 1;
            ctx.emit({ type: 'retry_scheduled', attempt, delayMs, error: serializeError(err) }, billedFact(call));
            return timer(delayMs, ctx.scheduler);
          });
        },
      }),
    );
  };
}

/** Where the run waits, each entry and exit logged. */
class LoggedWaits extends Waits {
  constructor(private readonly log: string[]) {
    super();
  }

  override enter(phase: CancelPhase): Wait {
    this.log.push(`${asyncScheduler.now()}: enter ${phase}`);
    return super.enter(phase);
  }

  override leave(wait: Wait): void {
    this.log.push(`${asyncScheduler.now()}: leave ${wait.phase}`);
    super.leave(wait);
  }
}

/** One attempt's script: what it emits (a response `r`), then how it ends, after `delay` virtual ms (0: at once). */
interface Step {
  readonly delay: number;
  readonly respond?: boolean;
  readonly end: 'complete' | 'open' | ModelCallError;
}

const transient = new ModelCallError('connection reset', { retryable: true });
const fatal = new ModelCallError('bad request', { status: 400 });
const tooLate = new ModelCallError('rate limited', { status: 429, retryable: true, retryAfterMs: 600_000 });
const response: ModelResponse = { text: 'ok', toolCalls: [], finishReason: 'stop' };

/** Attempts following `steps`, each subscription, value, end and teardown logged with its frame. */
function scriptedAttempts(log: string[], steps: readonly Step[]): Attempts {
  let i = 0;
  return (call, why) =>
    new Observable<ModelResponse>((subscriber) => {
      const n = ++call.attempts;
      const step = steps[i++];
      log.push(`${asyncScheduler.now()}: attempt ${n} subscribed (${why.cause ?? 'first'})`);
      if (step === undefined) throw new Error(`no step scripted for attempt ${n}`);
      const act = () => {
        if (step.respond) subscriber.next(response);
        if (step.end === 'complete') subscriber.complete();
        else if (step.end !== 'open') subscriber.error(step.end);
      };
      let timerSub: Subscription | undefined;
      if (step.delay === 0) act();
      else timerSub = asyncScheduler.schedule(act, step.delay);
      return () => {
        timerSub?.unsubscribe();
        log.push(`${asyncScheduler.now()}: attempt ${n} torn down`);
      };
    });
}

interface Scenario {
  readonly steps: readonly Step[];
  readonly maxRetries?: number;
  /** Cancel the run's token at this frame. */
  readonly cancelAt?: number;
  /** Unsubscribe the result at this frame. */
  readonly unsubscribeAt?: number;
}

/** Runs `scenario` through `operator` in virtual time and returns everything that happened, in order. */
function drive(operator: typeof retryTransient, scenario: Scenario): string[] {
  const log: string[] = [];
  new TestScheduler((a, b) => expect(a).toEqual(b)).run(({ flush }) => {
    const token = new CancelSignal();
    const ctx: RecoveryContext = {
      token,
      waits: new LoggedWaits(log),
      hopScheduler: asapScheduler,
      scheduler: asyncScheduler,
      emit: (draft: RunEventDraft) => log.push(`${asyncScheduler.now()}: emit ${draft.type}`),
    };
    const policy = retryPolicy({ maxRetries: scenario.maxRetries ?? 2, initialDelayMs: 100 });
    const call: ModelCall = {
      request: { instructions: '', items: [], tools: [] },
      attempts: 0,
      rescued: false,
      ledger: { billed: undefined },
    };
    const out$ = operator(ctx, policy, () => 0.5)(scriptedAttempts(log, scenario.steps))(call, FIRST_ATTEMPT);
    const sub = out$.subscribe({
      next: () => log.push(`${asyncScheduler.now()}: next`),
      // The name and status: the reference's retry-after error has a message of its own.
      error: (e: ModelCallError) => log.push(`${asyncScheduler.now()}: error ${e.name} ${e.status ?? '-'}`),
      complete: () => log.push(`${asyncScheduler.now()}: complete`),
    });
    if (scenario.cancelAt !== undefined) asyncScheduler.schedule(() => token.cancel('stop'), scenario.cancelAt);
    if (scenario.unsubscribeAt !== undefined) {
      asyncScheduler.schedule(() => {
        log.push(`${asyncScheduler.now()}: unsubscribe`);
        sub.unsubscribe();
      }, scenario.unsubscribeAt);
    }
    flush();
  });
  return log;
}

const SCENARIOS: Readonly<Record<string, Scenario>> = {
  'a success at once': { steps: [{ delay: 0, respond: true, end: 'complete' }] },
  'a transient error, then a success': {
    steps: [
      { delay: 2, end: transient },
      { delay: 1, respond: true, end: 'complete' },
    ],
  },
  'a transient error while the attempt is being subscribed, then a success': {
    steps: [
      { delay: 0, end: transient },
      { delay: 0, respond: true, end: 'complete' },
    ],
  },
  'a response, then a transient error (billed), then a success': {
    steps: [
      { delay: 2, respond: true, end: transient },
      { delay: 1, respond: true, end: 'complete' },
    ],
  },
  'an error that is not transient': { steps: [{ delay: 2, end: fatal }] },
  'retries spent': {
    maxRetries: 1,
    steps: [
      { delay: 1, end: transient },
      { delay: 1, end: transient },
    ],
  },
  'no retries at all (`retry: false`)': { maxRetries: 0, steps: [{ delay: 1, end: transient }] },
  'a retry-after longer than the policy honours': { steps: [{ delay: 1, end: tooLate }] },
  'a cancel in the frame of the failure': { cancelAt: 2, steps: [{ delay: 2, end: transient }] },
  'a cancel during the backoff': {
    cancelAt: 20,
    steps: [
      { delay: 2, end: transient },
      { delay: 1, end: 'complete' },
    ],
  },
  'unsubscribed during the backoff': {
    unsubscribeAt: 20,
    steps: [
      { delay: 2, end: transient },
      { delay: 1, end: 'complete' },
    ],
  },
  'unsubscribed while the retry runs': {
    unsubscribeAt: 60,
    steps: [
      { delay: 2, end: transient },
      { delay: 0, end: 'open' },
    ],
  },
};

describe("the hand-written retry of transient errors has RxJS's `retry`'s order of effects", () => {
  for (const [name, scenario] of Object.entries(SCENARIOS)) {
    it(name, () => {
      const mine = drive(retryTransient, scenario);
      const theirs = drive(rxjsRetryTransient, scenario);
      expect(mine).toEqual(theirs);
    });
  }

  it('the log of a transient error then a success: the notifier subscribed before the failed attempt is torn down', () => {
    expect(drive(retryTransient, SCENARIOS['a transient error, then a success']!)).toEqual([
      '0: attempt 1 subscribed (first)',
      '2: enter backoff',
      '2: attempt 1 torn down',
      '2: emit retry_scheduled',
      '52: leave backoff',
      '52: attempt 2 subscribed (retry)',
      '53: next',
      '53: complete',
      '53: attempt 2 torn down',
    ]);
  });
});
