/**
 * "Fallback behind a breaker" (src/engine/recovery/fallback-breaker.ts): a model failure of the
 * primary's attempts, or its open breaker, moves the model call to the fallback's attempts, whose
 * first one announces `fallback_activated` and says why it is made. The operator on its own, over
 * attempt factories, then the tie with a cancel in the real engine (the breaker counts in
 * test/breaker-fallback.test.ts).
 */
import { TestScheduler } from 'rxjs/testing';
import { beforeEach, describe, expect, it } from 'vitest';
import { CancelSignal } from '../../src/cancel/cancel-signal.js';
import { defineAgent } from '../../src/engine/define-agent.js';
import { fallbackWithBreaker } from '../../src/engine/recovery/fallback-breaker.js';
import { CircuitOpen } from '../../src/engine/recovery/stream-gate.js';
import { FIRST_ATTEMPT } from '../../src/engine/recovery/types.js';
import { run } from '../../src/engine/run.js';
import { ModelCallError, ModelOutputError } from '../../src/errors.js';
import type { RunEvent } from '../../src/events.js';
import { eventLabel, scriptedModel } from '../../src/testing/index.js';
import { answer, fakeAttempts, newCall } from '../support/recovery.js';

let ts: TestScheduler;
beforeEach(() => {
  ts = new TestScheduler((actual, expected) => expect(actual).toEqual(expected));
});

const down = new ModelCallError('service unavailable', { status: 503, retryable: true });

describe('the fallbackWithBreaker operator over attempt factories', () => {
  it('a model failure of the primary: the fallback is asked, announcing fallback_activated, with the error', () => {
    ts.run(({ cold, expectObservable, expectSubscriptions, flush }) => {
      const primary = fakeAttempts([cold('--#', undefined, down)]);
      const fallbackAnswer = cold('-(r|)', { r: answer('fb') });
      const fallback = fakeAttempts([fallbackAnswer]);
      const call = newCall();
      call.rescued = true;
      const out = fallbackWithBreaker('primary', 'fallback', fallback.attempts)(primary.attempts)(call, FIRST_ATTEMPT);
      expectObservable(out).toBe('---(r|)', { r: answer('fb') });
      expectSubscriptions(fallbackAnswer.subscriptions).toBe('--^!');
      flush();
      const announce = { type: 'fallback_activated', from: 'primary', to: 'fallback', reason: 'service unavailable' };
      expect(fallback.whys).toEqual([{ cause: 'fallback', error: down, announce }]);
      expect(call.rescued).toBe(false); // the fallback's broken stream may be rescued once too
    });
  });

  it('an open breaker (CircuitOpen): the fallback is asked with reason circuit_open and no error', () => {
    ts.run(({ cold, flush }) => {
      const primary = fakeAttempts([cold('#', undefined, new CircuitOpen())]);
      const fallback = fakeAttempts([cold('(r|)', { r: answer('fb') })]);
      const toFallback = fallbackWithBreaker('primary', 'fallback', fallback.attempts);
      toFallback(primary.attempts)(newCall(), FIRST_ATTEMPT).subscribe();
      flush();
      const announce = { type: 'fallback_activated', from: 'primary', to: 'fallback', reason: 'circuit_open' };
      expect(fallback.whys).toEqual([{ cause: 'fallback', announce }]);
    });
  });

  it('an unusable output is a model failure too; any other error passes on and the fallback is never asked', () => {
    ts.run(({ cold, expectObservable, flush }) => {
      const unusable = new ModelOutputError('no result', { code: 'no_result' });
      const switched = fakeAttempts([cold('(r|)', { r: answer('fb') })]);
      const failing = fakeAttempts([cold('#', undefined, unusable)]);
      fallbackWithBreaker('p', 'f', switched.attempts)(failing.attempts)(newCall(), FIRST_ATTEMPT).subscribe();
      const bug = new TypeError('not a model failure');
      const unused = fakeAttempts([cold('(r|)', { r: answer('fb') })]);
      const buggy = fakeAttempts([cold('-#', undefined, bug)]);
      const out = fallbackWithBreaker('p', 'f', unused.attempts)(buggy.attempts)(newCall(), FIRST_ATTEMPT);
      expectObservable(out).toBe('-#', undefined, bug);
      flush();
      expect(switched.count()).toBe(1);
      expect(unused.count()).toBe(0);
    });
  });

  it('a primary that answers: the fallback is never asked', () => {
    ts.run(({ cold, expectObservable, flush }) => {
      const fallback = fakeAttempts([cold('(r|)', { r: answer('fb') })]);
      const primary = fakeAttempts([cold('-(r|)', { r: answer('p') })]);
      expectObservable(
        fallbackWithBreaker('p', 'f', fallback.attempts)(primary.attempts)(newCall(), FIRST_ATTEMPT),
      ).toBe('-(r|)', { r: answer('p') });
      flush();
      expect(fallback.count()).toBe(0);
    });
  });
});

describe("a cancel tied with the primary's failure wins the switch (guarantee 4: cancelled is not failed)", () => {
  for (const order of ['cancel scheduled first', 'cancel scheduled after the failure'] as const) {
    it(`${order}: no fallback_activated, the fallback is never called`, () => {
      ts.run(({ flush }) => {
        const bad = new ModelCallError('bad', { status: 400 });
        const primary = scriptedModel([{ delayMs: 5, error: bad }], { id: 'primary' });
        const fallback = scriptedModel(['fb'], { id: 'fallback' });
        const agent = defineAgent({ name: 'f', instructions: '', model: primary, fallbackModel: fallback });
        const cancel = new CancelSignal();
        const labels: string[] = [];
        const events$ = run(agent, 'q', { cancel, retry: false });
        events$.subscribe((e: RunEvent) => labels.push(`${ts.now()}:${eventLabel(e)}`));
        if (order === 'cancel scheduled first') ts.schedule(() => cancel.cancel('stop'), 5);
        else ts.schedule(() => ts.schedule(() => cancel.cancel('stop'), 4), 1);
        flush();
        const head = ['0:run_started', '0:turn_started', '0:model_request_started'];
        expect(labels).toEqual([...head, '5:run_cancelled:model_request']);
        expect(fallback.calls).toHaveLength(0);
      });
    });
  }

  it("without a cancel the same failure switches: fallback_activated, then the fallback's request says why", () => {
    ts.run(({ flush }) => {
      const bad = new ModelCallError('bad', { status: 400 });
      const primary = scriptedModel([{ delayMs: 5, error: bad }], { id: 'primary' });
      const fallback = scriptedModel(['fb'], { id: 'fallback' });
      const agent = defineAgent({ name: 'f', instructions: '', model: primary, fallbackModel: fallback });
      const events: RunEvent[] = [];
      run(agent, 'q', { retry: false }).subscribe((e) => events.push(e));
      flush();
      const recovery = events.filter((e) => e.type === 'fallback_activated' || e.type === 'model_request_started');
      expect(recovery.map((e) => [e.at, e.type])).toEqual([
        [0, 'model_request_started'],
        [5, 'fallback_activated'],
        [5, 'model_request_started'],
      ]);
      expect(recovery[2]).toMatchObject({
        model: 'fallback',
        attempt: 2,
        stream: true,
        cause: 'fallback',
        error: { name: 'ModelCallError', message: 'bad', status: 400 },
      });
      expect(recovery[0]).not.toHaveProperty('cause');
      expect(events.at(-1)).toMatchObject({ type: 'run_completed', output: 'fb' });
    });
  });
});
