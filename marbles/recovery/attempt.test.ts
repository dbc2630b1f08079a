/**
 * Checkpoint 3: model stream (each event raced against cancel and the
 * deadlines), with the real engine in virtual time. Inside `run()` the async
 * and asap schedulers are virtual, so no scheduler is injected. Then the one
 * request every recovery operator is made of (src/engine/recovery/attempt.ts), on its own.
 */
import { tap, type Observable } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { beforeEach, describe, expect, it } from 'vitest';
import { CancelSignal } from '../../src/cancel/index.js';
import { defineAgent } from '../../src/engine/define-agent.js';
import { run } from '../../src/engine/run.js';
import { eventLabels, scriptedModel, sequentialIds } from '../../src/testing/index.js';
import type { ModelEvent, ModelProvider, ModelRequest } from '../../src/model/types.js';
import { ModelCallError, ModelOutputError } from '../../src/errors.js';
import type { RunEventDraft } from '../../src/events.js';
import { requestAttempts } from '../../src/engine/recovery/attempt.js';
import { FIRST_ATTEMPT, StreamBroke } from '../../src/engine/recovery/types.js';
import type { Fact } from '../../src/engine/totals.js';
import { newCall, recoveryContext } from '../support/recovery.js';

const reset = new ModelCallError('connection reset', { retryable: true });

let ts: TestScheduler;
beforeEach(() => {
  ts = new TestScheduler((actual, expected) => expect(actual).toEqual(expected));
});

const L = {
  s: 'run_started',
  t: 'turn_started',
  q: 'model_request_started',
  d: 'text_delta',
  r: 'model_response_completed',
  u: 'turn_completed',
  C: 'run_completed',
  x: 'run_cancelled:model_stream',
  D: 'run_cancelled:dispatch',
};
const E: Record<string, ModelEvent> = {
  a: { type: 'text_delta', delta: 'a' },
  b: { type: 'text_delta', delta: 'b' },
  c: { type: 'text_delta', delta: 'c' },
  d: { type: 'text_delta', delta: 'd' },
  r: { type: 'response', response: { text: 'abcd', toolCalls: [], finishReason: 'stop' } },
};
/** Deltas at frames 5, 10, 15, 20; the response and completion at 25. */
const STREAM = '5ms a 4ms b 4ms c 4ms d 4ms (r|)';

/** Schedules `work` at `frame`, after every action already scheduled for that frame. */
function late(work: () => void, frame: number): void {
  ts.schedule(() => ts.schedule(work, frame - 1), 1);
}

function setup(cold: (m: string, v?: Record<string, ModelEvent>) => any) {
  const stream = cold(STREAM, E);
  const read: string[] = [];
  const model = scriptedModel([
    { events: () => stream.pipe(tap((e: ModelEvent) => read.push(e.type === 'text_delta' ? e.delta : e.type))) },
  ]);
  const agent = defineAgent({ name: 'a', instructions: '', model });
  const cancel = new CancelSignal();
  const events$ = run(agent, 'hi', { cancel, idGenerator: sequentialIds() }).pipe(eventLabels());
  return { stream, read, model, cancel, events$ };
}

describe('row 3: streaming, each event raced against the cancel', () => {
  it('without a cancel the stream is read to the end', () => {
    ts.run(({ cold, expectObservable, expectSubscriptions }) => {
      const { stream, events$ } = setup(cold);
      expectObservable(events$).toBe('(stq) d 4ms d 4ms d 4ms d 4ms (ruC|)', L);
      expectSubscriptions(stream.subscriptions).toBe('^ 24ms !');
    });
  });

  it('cancel mid-stream: no further event is read and the provider call is torn down at the cancel frame', () => {
    ts.run(({ cold, expectObservable, expectSubscriptions, flush }) => {
      const { stream, read, model, cancel, events$ } = setup(cold);
      ts.schedule(() => cancel.cancel('stop'), 12);
      expectObservable(events$).toBe('(stq) d 4ms d 1ms (x|)', L);
      expectSubscriptions(stream.subscriptions).toBe('^ 11ms !');
      flush();
      expect(read).toEqual(['a', 'b']);
      expect(model.calls.map((c) => c.tornDown)).toEqual([true]);
      expect(ts.actions).toEqual([]);
    });
  });

  it('tie, cancel scheduled before the response in its frame: the response is never read', () => {
    ts.run(({ cold, expectObservable, expectSubscriptions, flush }) => {
      const { stream, read, model, cancel, events$ } = setup(cold);
      ts.schedule(() => cancel.cancel('stop'), 25);
      expectObservable(events$).toBe('(stq) d 4ms d 4ms d 4ms d 4ms (x|)', L);
      expectSubscriptions(stream.subscriptions).toBe('^ 24ms !');
      flush();
      expect(read).toEqual(['a', 'b', 'c', 'd']);
      expect(model.calls[0]!.tornDown).toBe(true);
    });
  });

  it('tie, cancel scheduled after the response in its frame: the cancel still wins at the next stage', () => {
    ts.run(({ cold, expectObservable, flush }) => {
      const { read, model, cancel, events$ } = setup(cold);
      late(() => cancel.cancel('stop'), 25);
      expectObservable(events$).toBe('(stq) d 4ms d 4ms d 4ms d 4ms (ruD|)', L);
      flush();
      expect(read).toEqual(['a', 'b', 'c', 'd', 'response']);
      expect(model.calls.length).toBe(1);
    });
  });

  it('a cancel raised synchronously in the handler of a text_delta: the next event is never read', () => {
    ts.run(({ cold, expectSubscriptions, flush }) => {
      const { stream, read, cancel, events$ } = setup(cold);
      const seen: string[] = [];
      events$.subscribe((label) => {
        seen.push(label);
        if (label === 'text_delta') cancel.cancel('stop');
      });
      expectSubscriptions(stream.subscriptions).toBe('^ 4ms !');
      flush();
      expect(read).toEqual(['a']);
      expect(seen).toEqual([
        'run_started',
        'turn_started',
        'model_request_started',
        'text_delta',
        'run_cancelled:model_stream',
      ]);
    });
  });
});

describe('requestAttempts: one request, the base of every recovery operator (its own spec)', () => {
  const usage = { inputTokens: 1, outputTokens: 2, totalTokens: 3 };
  const response = { text: 'xy', toolCalls: [], finishReason: 'stop' as const, usage };
  const M: Record<string, ModelEvent> = {
    x: { type: 'text_delta', delta: 'x' },
    y: { type: 'text_delta', delta: 'y' },
    r: { type: 'response', response },
  };
  const off = { deadlines: { firstEventMs: false, idleMs: false }, stream: undefined, wrap: undefined } as const;
  const provider = (events$: Observable<ModelEvent>): ModelProvider => ({ id: 'm', call: () => events$ });

  it("emits model_request_started and the deltas through the run's route, and the response as its value", () => {
    ts.run(({ cold, expectObservable, flush }) => {
      const { ctx, events, waits } = recoveryContext();
      const out = requestAttempts(ctx, provider(cold('--x-y(r|)', M)), off)(newCall(), FIRST_ATTEMPT);
      expectObservable(out).toBe('-----(v|)', { v: response });
      const seen: string[] = [];
      for (const frame of [1, 3]) ts.schedule(() => seen.push(`${frame}:${waits.innermost}`), frame);
      flush();
      expect(events).toEqual(['0:model_request_started:1', '2:text_delta:x', '4:text_delta:y']);
      expect(seen).toEqual(['1:turn_entry', '3:model_stream']); // the stage that starts it marks model_request
    });
  });

  it('the attempt says why it is made, and the usage a failed attempt was billed rides with it', () => {
    ts.run(({ cold, flush }) => {
      const { ctx, facts } = recoveryContext();
      const drafts: unknown[] = [];
      const emit = (draft: RunEventDraft, fact?: Fact) => (drafts.push(draft), ctx.emit(draft, fact));
      const seeing = { ...ctx, emit };
      const call = newCall();
      call.attempts = 1;
      call.ledger.billed = { inputTokens: 1, outputTokens: 1, totalTokens: 2, reported: true };
      requestAttempts(seeing, provider(cold('(r|)', M)), off)(call, { cause: 'retry', error: reset }).subscribe();
      flush();
      expect(drafts[0]).toEqual({
        type: 'model_request_started',
        model: 'm',
        attempt: 2,
        stream: true,
        cause: 'retry',
        error: { name: 'ModelCallError', message: 'connection reset', retryable: true },
      });
      expect(facts[0]).toEqual({ billed: { inputTokens: 1, outputTokens: 1, totalTokens: 2, reported: true } });
      expect(call.ledger.billed).toBeUndefined();
    });
  });

  it('a streamed failure after the first event is a rescue candidate; before it, or unusable output, is not', () => {
    ts.run(({ cold, flush }) => {
      const { ctx } = recoveryContext();
      const failures: Record<string, string> = {};
      const attempt = (name: string, events$: Observable<ModelEvent>) =>
        requestAttempts(
          ctx,
          provider(events$),
          off,
        )(newCall(), FIRST_ATTEMPT).subscribe({
          error: (f) => {
            failures[name] = f instanceof StreamBroke ? `rescue:${(f.error as Error).message}` : (f as Error).message;
          },
        });
      attempt('after the first event', cold('-x#', M, reset));
      attempt('before it', cold('-#', M, reset));
      attempt('unusable output', cold('-x#', M, new ModelOutputError('bad chunk', { code: 'malformed_chunk' })));
      const marked = new ModelCallError('cut', { retryable: true, streamStarted: true });
      attempt('marked by the adapter', cold('-#', M, marked));
      flush();
      expect(failures).toEqual({
        'after the first event': 'rescue:connection reset',
        'before it': 'connection reset',
        'unusable output': 'bad chunk',
        'marked by the adapter': 'rescue:cut',
      });
    });
  });

  it("a rescue is not streamed; a response then a failure was billed (the call's ledger)", () => {
    ts.run(({ cold, flush }) => {
      const { ctx } = recoveryContext();
      const requests: ModelRequest[] = [];
      const call = newCall();
      const billedThenBroken: ModelProvider = { id: 'm', call: (req) => (requests.push(req), cold('-r#', M, reset)) };
      const rescue$ = requestAttempts(ctx, billedThenBroken, off)(call, { cause: 'rescue', error: reset });
      rescue$.subscribe({ error: () => {} });
      flush();
      expect(requests.map((r) => r.stream)).toEqual([false]);
      expect(call.ledger.billed).toEqual({ inputTokens: 1, outputTokens: 2, totalTokens: 3, reported: true });
    });
  });

  it('a response that streamed no text gives its text as one delta, marked as not streamed (not for partial)', () => {
    ts.run(({ cold, flush }) => {
      const { ctx, events, facts } = recoveryContext();
      requestAttempts(ctx, provider(cold('-(r|)', M)), off)(newCall(), FIRST_ATTEMPT).subscribe();
      flush();
      expect(events).toEqual(['0:model_request_started:1', '1:text_delta:xy']);
      expect(facts).toEqual([undefined, { whole: true }]);
    });
  });

  it('context propagation: wrap.model runs the request (provider.call, its subscription), told the attempt', () => {
    ts.run(({ cold, flush }) => {
      const { ctx } = recoveryContext();
      const log: string[] = [];
      const calls$ = cold('-(r|)', M);
      const traced: ModelProvider = { id: 'm', call: () => (log.push('call'), calls$) };
      const wrap = <T>(attempt: { model: string; attempt: number; stream: boolean }, fn: () => T): T => {
        log.push(`enter ${attempt.model} ${attempt.attempt} ${attempt.stream}`);
        const out = fn();
        log.push(`leave, subscribed: ${calls$.subscriptions.length}`);
        return out;
      };
      requestAttempts(ctx, traced, { ...off, wrap })(newCall(), FIRST_ATTEMPT).subscribe();
      flush();
      expect(log).toEqual(['enter m 1 true', 'call', 'leave, subscribed: 1']);
    });
  });
});
