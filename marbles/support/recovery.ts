import { asapScheduler, asyncScheduler, defer, type Observable } from 'rxjs';
import { CancelSignal } from '../../src/cancel/cancel-signal.js';
import type { RunEventDraft } from '../../src/events.js';
import type { ModelResponse } from '../../src/model/types.js';
import type { AttemptCause, Attempts, ModelCall, RecoveryContext } from '../../src/engine/recovery/types.js';
import type { Fact } from '../../src/engine/totals.js';
import { Waits } from '../../src/engine/waits.js';

/**
 * A run's side of the recovery operators, for their own marble specs (inside `TestScheduler.run`,
 * where asap and async are virtual): a token, where the run waits, and every event emitted as
 * `"<frame>:<type>"` (with the attempt, delay or reason where the event has one).
 */
export function recoveryContext() {
  const token = new CancelSignal();
  const waits = new Waits();
  const events: string[] = [];
  const facts: (Fact | undefined)[] = [];
  const ctx: RecoveryContext = {
    token,
    waits,
    hopScheduler: asapScheduler,
    scheduler: asyncScheduler,
    emit: (draft: RunEventDraft, fact?: Fact) => {
      events.push(`${asyncScheduler.now()}:${describe(draft)}`);
      facts.push(fact);
    },
  };
  return { ctx, token, waits, events, facts };
}

function describe(draft: RunEventDraft): string {
  switch (draft.type) {
    case 'retry_scheduled':
      return `retry_scheduled:${draft.attempt}:${draft.delayMs}`;
    case 'fallback_activated':
      return `fallback_activated:${draft.reason}`;
    case 'model_request_started':
      return `model_request_started:${draft.attempt}${draft.cause ? `:${draft.cause}` : ''}`;
    case 'text_delta':
      return `text_delta:${draft.delta}`;
    default:
      return draft.type;
  }
}

/** A fresh model call. */
export function newCall(): ModelCall {
  const request = { instructions: '', items: [], tools: [] };
  return { request, attempts: 0, rescued: false, ledger: { billed: undefined } };
}

/**
 * Attempts that give `outcomes` (responses, or an error marble) in order, one per subscription
 * (each counted as a request), and record why each was made and where the run waited then.
 */
export function fakeAttempts(outcomes: readonly Observable<unknown>[], waits?: Waits) {
  const whys: AttemptCause[] = [];
  const phases: string[] = [];
  let i = 0;
  const attempts: Attempts = (call, why) =>
    defer(() => {
      call.attempts++;
      whys.push(why);
      if (waits) phases.push(waits.innermost);
      const outcome = outcomes[i++];
      if (!outcome) throw new Error(`no outcome scripted for attempt ${i}`);
      return outcome as Observable<ModelResponse>;
    });
  return { attempts, whys, phases, count: () => i };
}

/** A model response with `text`. */
export const answer = (text: string): ModelResponse => ({ text, toolCalls: [], finishReason: 'stop' });
