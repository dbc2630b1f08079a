/**
 * Checkpoint 5: rescue ("rescue once", src/engine/recovery/rescue-once.ts): a stream that fails
 * after its first event is rescued once by a non-streaming request, polled on entry, then raced;
 * with the real engine, then the operator on its own, over an attempt factory.
 */
import { TestScheduler } from 'rxjs/testing';
import { beforeEach, describe, expect, it } from 'vitest';
import { CancelSignal } from '../../src/cancel/index.js';
import { defineAgent } from '../../src/engine/define-agent.js';
import { run } from '../../src/engine/run.js';
import { ModelCallError } from '../../src/errors.js';
import type { RunEvent } from '../../src/events.js';
import type { ModelEvent, ModelRequest } from '../../src/model/types.js';
import { eventLabels, scriptedModel, sequentialIds } from '../../src/testing/index.js';
import { rescueOnce } from '../../src/engine/recovery/rescue-once.js';
import { FIRST_ATTEMPT, StreamBroke } from '../../src/engine/recovery/types.js';
import { answer, fakeAttempts, newCall, recoveryContext } from '../support/recovery.js';

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
  y: 'retry_scheduled',
  C: 'run_completed',
  F: 'run_failed:model_error',
  x: 'run_cancelled:model_stream',
  R: 'run_cancelled:rescue',
};
const E: Record<string, ModelEvent> = {
  a: { type: 'text_delta', delta: 'Hel' },
  r: {
    type: 'response',
    response: {
      text: 'Hello',
      toolCalls: [],
      finishReason: 'stop',
      usage: { inputTokens: 3, outputTokens: 2, totalTokens: 5 },
    },
  },
};
const reset = new ModelCallError('connection reset', { retryable: true });

/** Schedules `work` at `frame`, after every action of that frame that exists by frame `from`. */
function late(work: () => void, frame: number, from: number): void {
  ts.schedule(() => ts.schedule(work, frame - from), from);
}

/** The stream sends "Hel" at 5 and breaks at 10; the non-streaming rescue answers 20 frames after it is sent. */
function setup(cold: (m: string, v?: Record<string, ModelEvent>, e?: unknown) => any) {
  const stream = cold('5ms a 4ms #', E, reset);
  const rescue = cold('20ms (r|)', E);
  const requests: ModelRequest[] = [];
  const model = scriptedModel([{ events: () => stream }, { events: (req) => (requests.push(req), rescue) }]);
  const agent = defineAgent({ name: 'a', instructions: '', model });
  const cancel = new CancelSignal();
  const events$ = run(agent, 'hi', { cancel, idGenerator: sequentialIds(), random: () => 0.5 });
  return { stream, rescue, requests, model, cancel, events$, labels$: events$.pipe(eventLabels()) };
}

describe('row 5: the non-streaming rescue of a broken stream', () => {
  it('the stream breaks after "Hel": one non-streaming request rescues it (no retry_scheduled)', () => {
    ts.run(({ cold, expectSubscriptions, flush }) => {
      const { stream, rescue, requests, model, events$ } = setup(cold);
      const seen: RunEvent[] = [];
      events$.subscribe((e) => seen.push(e));
      expectSubscriptions(stream.subscriptions).toBe('^ 9ms !');
      expectSubscriptions(rescue.subscriptions).toBe('10ms ^ 19ms !');
      flush();
      expect(seen.map((e) => [e.at, e.type])).toEqual([
        [0, 'run_started'],
        [0, 'turn_started'],
        [0, 'model_request_started'],
        [5, 'text_delta'],
        [10, 'model_request_started'],
        [30, 'text_delta'],
        [30, 'model_response_completed'],
        [30, 'turn_completed'],
        [30, 'run_completed'],
      ]);
      expect(
        seen
          .filter((e) => e.type === 'model_request_started')
          .map((e) => e.type === 'model_request_started' && [e.attempt, e.stream]),
      ).toEqual([
        [1, true],
        [2, false],
      ]);
      expect(requests.map((r) => r.stream)).toEqual([false]);
      expect(model.calls.length).toBe(2);
    });
  });

  it('cancel while the rescue is in flight: the rescue request is torn down (phase rescue)', () => {
    ts.run(({ cold, expectObservable, expectSubscriptions, flush }) => {
      const { rescue, model, cancel, labels$ } = setup(cold);
      ts.schedule(() => cancel.cancel('stop'), 20);
      expectObservable(labels$).toBe('(stq) d 4ms q 9ms (R|)', L);
      expectSubscriptions(rescue.subscriptions).toBe('10ms ^ 9ms !');
      flush();
      expect(model.calls.map((c) => c.tornDown)).toEqual([false, true]);
    });
  });

  it('tie with the stream failure, cancel scheduled first: the rescue is never sent', () => {
    ts.run(({ cold, expectObservable, expectSubscriptions, flush }) => {
      const { stream, rescue, model, cancel, labels$ } = setup(cold);
      ts.schedule(() => cancel.cancel('stop'), 10);
      expectObservable(labels$).toBe('(stq) d 4ms (x|)', L);
      expectSubscriptions(stream.subscriptions).toBe('^ 9ms !');
      expectSubscriptions(rescue.subscriptions).toBe([]);
      flush();
      expect(model.calls.length).toBe(1);
    });
  });

  it('tie with the stream failure, cancel scheduled after it: polled on entry, the rescue is never sent', () => {
    ts.run(({ cold, expectObservable, expectSubscriptions, flush }) => {
      const { rescue, model, cancel, labels$ } = setup(cold);
      late(() => cancel.cancel('stop'), 10, 1);
      expectObservable(labels$).toBe('(stq) d 4ms (R|)', L);
      expectSubscriptions(rescue.subscriptions).toBe([]);
      flush();
      expect(model.calls.length).toBe(1);
    });
  });

  it('only once per model call: a rescue that fails too goes to the retry, which streams again', () => {
    ts.run(({ cold, expectObservable, flush }) => {
      const broken = (): any => cold('5ms a 4ms #', E, reset);
      const model = scriptedModel([{ events: broken }, { error: reset }, { events: broken }, { error: reset }]);
      const agent = defineAgent({ name: 'a', instructions: '', model });
      const labels$ = run(agent, 'hi', { retry: { maxRetries: 1, initialDelayMs: 100 }, random: () => 0.5 }).pipe(
        eventLabels(),
      );
      // stream (0) → rescue (10) fails → retry_scheduled (10) → stream again (60) breaks at 70 → no second rescue
      expectObservable(labels$).toBe('(stq) d 4ms (qy) 46ms q 4ms d 4ms (F|)', L);
      flush();
      expect(model.requests.map((r) => r.stream)).toEqual([true, false, true]);
    });
  });

  it('a rescue that emits a delta, then fails, reports its own error (model_error), not an internal wrapper', () => {
    ts.run(({ cold, flush }) => {
      const broken = (): any => cold('5ms a 4ms #', E, reset);
      const model = scriptedModel([{ events: broken }, { events: broken }]);
      const agent = defineAgent({ name: 'a', instructions: '', model });
      const events: RunEvent[] = [];
      run(agent, 'hi', { retry: false }).subscribe((e) => events.push(e));
      flush();
      expect(events.at(-1)).toMatchObject({
        type: 'run_failed',
        at: 20,
        stopReason: 'model_error',
        error: { name: 'ModelCallError', message: 'connection reset' },
      });
    });
  });

  it('a failure before the first event is not rescued (it is retried)', () => {
    ts.run(({ expectObservable }) => {
      const model = scriptedModel([{ delayMs: 5, error: reset }, 'ok']);
      const agent = defineAgent({ name: 'a', instructions: '', model });
      const labels$ = run(agent, 'hi', { retry: { maxRetries: 1, initialDelayMs: 100 }, random: () => 0.5 }).pipe(
        eventLabels(),
      );
      expectObservable(labels$).toBe('(stq) y 49ms (qdruC|)', L);
    });
  });
});

describe('the rescueOnce operator over an attempt factory (its own spec)', () => {
  const ok = answer('ok');

  it('a stream broken after its first event is sent again without streaming, at the rescue stage, saying why', () => {
    ts.run(({ cold, expectObservable, expectSubscriptions, flush }) => {
      const { ctx, waits } = recoveryContext();
      const broken = cold('--#', undefined, new StreamBroke(reset));
      const rescue = cold('-(r|)', { r: ok });
      const { attempts, whys, phases } = fakeAttempts([broken, rescue], waits);
      const call = newCall();
      expectObservable(rescueOnce(ctx)(attempts)(call, FIRST_ATTEMPT)).toBe('---(r|)', { r: ok });
      expectSubscriptions(rescue.subscriptions).toBe('--^!');
      flush();
      expect(whys).toEqual([FIRST_ATTEMPT, { cause: 'rescue', error: reset }]);
      expect(phases).toEqual(['turn_entry', 'rescue']);
      expect(call.rescued).toBe(true);
    });
  });

  it('once per provider in a call: a second broken stream passes as its plain error, as does any other failure', () => {
    ts.run(({ cold, expectObservable }) => {
      const { ctx } = recoveryContext();
      const rescued = newCall();
      rescued.rescued = true;
      const again = fakeAttempts([cold('--#', undefined, new StreamBroke(reset))]);
      expectObservable(rescueOnce(ctx)(again.attempts)(rescued, FIRST_ATTEMPT)).toBe('--#', undefined, reset);
      const plain = fakeAttempts([cold('--#', undefined, reset)]);
      expectObservable(rescueOnce(ctx)(plain.attempts)(newCall(), FIRST_ATTEMPT)).toBe('--#', undefined, reset);
    });
  });

  for (const order of ['cancel scheduled first', 'cancel scheduled after the break'] as const) {
    it(`a cancel in the frame of the break (${order}): the rescue is never sent`, () => {
      ts.run(({ cold, expectObservable, flush }) => {
        const { ctx, token } = recoveryContext();
        const rescue = cold('r', { r: ok });
        const { attempts, count } = fakeAttempts([cold('--#', undefined, new StreamBroke(reset)), rescue]);
        if (order === 'cancel scheduled first') ts.schedule(() => token.cancel('stop'), 2);
        else late(() => token.cancel('stop'), 2, 1);
        expectObservable(rescueOnce(ctx)(attempts)(newCall(), FIRST_ATTEMPT)).toBe('--|');
        flush();
        expect(count()).toBe(1);
        expect(rescue.subscriptions).toEqual([]);
      });
    });
  }
});
