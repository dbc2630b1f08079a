/**
 * Checkpoint 4: stream gate ("the stream gate", src/engine/recovery/stream-gate.ts): an agent with
 * `breaker` options and no `fallbackModel` holds its model request while the
 * primary's breaker is open (phase `stream_gate`) until the cool-down ends,
 * and then sends it as the half-open probe; while another run's probe is out,
 * it waits for that probe's outcome. The wait is a cancel-aware timer. With the real engine, then
 * the operator on its own, over an attempt factory (each attempt a model_request stage, its
 * outcome reported to the breaker).
 */
import { NEVER } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { beforeEach, describe, expect, it } from 'vitest';
import { CancelSignal } from '../../src/cancel/index.js';
import { breakerFor } from '../../src/engine/recovery/breaker.js';
import { defineAgent } from '../../src/engine/define-agent.js';
import { run } from '../../src/engine/run.js';
import { ModelCallError } from '../../src/errors.js';
import type { RunEvent } from '../../src/events.js';
import { eventLabels, scriptedModel, type ScriptedStep } from '../../src/testing/index.js';
import { CircuitBreaker } from '../../src/engine/recovery/breaker.js';
import { CircuitOpen, streamGate } from '../../src/engine/recovery/stream-gate.js';
import { FIRST_ATTEMPT } from '../../src/engine/recovery/types.js';
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
  C: 'run_completed',
  g: 'run_cancelled:stream_gate',
  m: 'run_cancelled:model_request',
};
const overloaded = new ModelCallError('overloaded', { status: 529, retryable: true });

function late(work: () => void, frame: number, from: number): void {
  ts.schedule(() => ts.schedule(work, frame - from), from);
}

/** Run 1 (frame 0) fails once and opens the breaker (threshold 1, cool-down 1000); run 2 starts at frame 100. */
function setup(steps: (ScriptedStep | string)[] = [{ error: overloaded }, 'ok']) {
  const model = scriptedModel(steps);
  const agent = defineAgent({ name: 'a', instructions: '', model, breaker: { failureThreshold: 1, cooldownMs: 1000 } });
  const first: string[] = [];
  run(agent, 'one', { retry: false })
    .pipe(eventLabels())
    .subscribe((l) => first.push(l));
  return { model, agent, first, breaker: breakerFor(model, agent.breaker) };
}

/** Subscribes run 2 at `frame` and collects its labels with their frames. */
function startAt(frame: number, agent: ReturnType<typeof defineAgent>, cancel?: CancelSignal): [number, string][] {
  const out: [number, string][] = [];
  ts.schedule(() => {
    run(agent, 'two', { retry: false, ...(cancel ? { cancel } : {}) }).subscribe((e: RunEvent) =>
      out.push([ts.now(), e.type === 'run_cancelled' ? `run_cancelled:${e.phase}` : e.type]),
    );
  }, frame);
  return out;
}

describe('row 4: the stream gate while the breaker is open and there is no fallback', () => {
  it('run 2 waits at the gate until the cool-down ends, then is the half-open probe and closes the breaker', () => {
    ts.run(({ flush }) => {
      const { model, agent, first, breaker } = setup();
      const second = startAt(100, agent);
      ts.schedule(() => expect([breaker.state, breaker.waitMs(ts.now())]).toEqual(['open', 500]), 500);
      flush();
      expect(first).toEqual(['run_started', 'turn_started', 'model_request_started', 'run_failed:model_error']);
      expect(second).toEqual([
        [100, 'run_started'],
        [100, 'turn_started'],
        [1000, 'model_request_started'],
        [1000, 'text_delta'],
        [1000, 'model_response_completed'],
        [1000, 'turn_completed'],
        [1000, 'run_completed'],
      ]);
      expect(model.calls.length).toBe(2);
      expect(breaker.state).toBe('closed');
    });
  });

  it('cancel at the gate: the wait is abandoned, no request is sent, nothing stays scheduled', () => {
    ts.run(({ flush }) => {
      const { model, agent, breaker } = setup();
      const cancel = new CancelSignal();
      const second = startAt(100, agent, cancel);
      const pending: number[] = [];
      ts.schedule(() => {
        pending.push(ts.actions.length);
        cancel.cancel('stop');
        pending.push(ts.actions.length);
      }, 400);
      flush();
      expect(second).toEqual([
        [100, 'run_started'],
        [100, 'turn_started'],
        [400, 'run_cancelled:stream_gate'],
      ]);
      expect(pending).toEqual([1, 0]);
      expect(model.calls.length).toBe(1);
      expect(breaker.state).toBe('open'); // the cancel neither probed nor fed it
    });
  });

  it('tie at the end of the cool-down, cancel scheduled first: no probe is sent', () => {
    ts.run(({ flush }) => {
      const { model, agent } = setup();
      const cancel = new CancelSignal();
      const second = startAt(100, agent, cancel);
      ts.schedule(() => cancel.cancel('stop'), 1000);
      flush();
      expect(second.at(-1)).toEqual([1000, 'run_cancelled:stream_gate']);
      expect(model.calls.length).toBe(1);
    });
  });

  it('tie at the end of the cool-down, cancel scheduled after the gate timer: polled first, no probe is sent or claimed', () => {
    ts.run(({ flush }) => {
      const { model, agent, breaker } = setup();
      const cancel = new CancelSignal();
      const second = startAt(100, agent, cancel);
      late(() => cancel.cancel('stop'), 1000, 101); // the gate timer was scheduled at frame 100
      flush();
      expect(second.at(-1)).toEqual([1000, 'run_cancelled:model_request']);
      expect(model.calls.length).toBe(1);
      expect(breaker.waitMs(ts.now())).toBe(0); // the probe is still free
    });
  });

  it('while another run probes, a third waits for the outcome; a cancelled probe is handed to the waiter', () => {
    ts.run(({ flush }) => {
      const { agent, breaker } = setup([{ error: overloaded }, { hold: NEVER }, 'ok']);
      const probeCancel = new CancelSignal();
      const second = startAt(1000, agent, probeCancel); // the probe: its request hangs
      const third = startAt(1100, agent); // waits on the probe (no timer)
      ts.schedule(() => expect([breaker.state, breaker.waitMs(ts.now())]).toEqual(['half_open', undefined]), 1200);
      ts.schedule(() => probeCancel.cancel('stop'), 1500);
      flush();
      expect(second.at(-1)).toEqual([1500, 'run_cancelled:model_request']);
      expect(third).toEqual([
        [1100, 'run_started'],
        [1100, 'turn_started'],
        [1500, 'model_request_started'],
        [1500, 'text_delta'],
        [1500, 'model_response_completed'],
        [1500, 'turn_completed'],
        [1500, 'run_completed'],
      ]);
      expect(breaker.state).toBe('closed');
    });
  });

  it('without breaker options and without a fallback there is no gate: requests go straight to the provider', () => {
    ts.run(({ expectObservable }) => {
      const model = scriptedModel([{ error: overloaded }, { error: overloaded }, { error: overloaded }, 'ok']);
      const agent = defineAgent({ name: 'a', instructions: '', model });
      expectObservable(run(agent, 'x', { retry: { maxRetries: 3, initialDelayMs: 0 } }).pipe(eventLabels())).toBe(
        '(stqyqyqyqdruC|)',
        { ...L, y: 'retry_scheduled' },
      );
    });
  });
});

describe('the streamGate operator over an attempt factory (its own spec)', () => {
  const ok = answer('ok');
  /** A breaker opened at frame 0 for 100 frames. */
  const opened = () => {
    const breaker = new CircuitBreaker(1, 100);
    breaker.failure(0);
    return breaker;
  };

  it('each attempt is a model_request stage: one hop, then a poll, then the attempt', () => {
    ts.run(({ cold, expectObservable, flush }) => {
      const { ctx, waits } = recoveryContext();
      const started = fakeAttempts([cold('-(r|)', { r: ok })], waits);
      expectObservable(
        streamGate(ctx, new CircuitBreaker(), 'ignore')(started.attempts)(newCall(), FIRST_ATTEMPT),
      ).toBe('-(r|)', { r: ok });
      flush();
      expect(started.phases).toEqual(['model_request']);
    });
  });

  it('a cancel raised in the frame before the hop runs means no attempt (cancel wins at a stage start)', () => {
    ts.run(({ cold, expectObservable, flush }) => {
      const { ctx, token } = recoveryContext();
      const stopped = fakeAttempts([cold('r', { r: ok })]);
      ts.schedule(() => token.cancel('stop'), 0); // created before the hop: it runs first
      const out = streamGate(ctx, new CircuitBreaker(), 'ignore')(stopped.attempts)(newCall(), FIRST_ATTEMPT);
      expectObservable(out).toBe('|');
      flush();
      expect(stopped.count()).toBe(0);
    });
  });

  it('the announce of an attempt (a fallback_activated) is emitted at its stage start, before the attempt', () => {
    ts.run(({ cold, flush }) => {
      const { ctx, events } = recoveryContext();
      const order: string[] = [];
      const { attempts } = fakeAttempts([cold('(r|)', { r: ok })]);
      const announce = { type: 'fallback_activated', from: 'a', to: 'b', reason: 'x' } as const;
      const seen: typeof attempts = (call, why) => {
        order.push(`attempt after ${events.length} event`);
        return attempts(call, why);
      };
      streamGate(ctx, new CircuitBreaker(), 'ignore')(seen)(newCall(), { cause: 'fallback', announce }).subscribe();
      flush();
      expect(events).toEqual(['0:fallback_activated:x']);
      expect(order).toEqual(['attempt after 1 event']);
    });
  });

  it('the breaker hears each outcome: a success at once, a failure one hop later, one tied with a cancel never', () => {
    ts.run(({ cold, flush }) => {
      const { ctx } = recoveryContext();
      const breaker = new CircuitBreaker(2, 100);
      const failing = fakeAttempts([cold('-#', undefined, overloaded)]);
      streamGate(ctx, breaker, 'ignore')(failing.attempts)(newCall(), FIRST_ATTEMPT).subscribe({ error: () => {} });
      flush();
      expect(breaker.failures).toBe(1);
      const tied = recoveryContext();
      const cancelled = fakeAttempts([cold('-#', undefined, overloaded)]);
      const tied$ = streamGate(tied.ctx, breaker, 'ignore')(cancelled.attempts)(newCall(), FIRST_ATTEMPT);
      tied$.subscribe({ error: () => {} });
      late(() => tied.token.cancel('stop'), 1, 0);
      flush();
      expect(breaker.failures).toBe(1);
      const answering = fakeAttempts([cold('-(r|)', { r: ok })]);
      streamGate(ctx, breaker, 'ignore')(answering.attempts)(newCall(), FIRST_ATTEMPT).subscribe();
      flush();
      expect([breaker.state, breaker.failures]).toEqual(['closed', 0]);
    });
  });

  it('ignore: an open breaker is not asked; refuse: it refuses the attempt with CircuitOpen, none is made', () => {
    ts.run(({ cold, expectObservable, flush }) => {
      const { ctx } = recoveryContext();
      const ignored = fakeAttempts([cold('(r|)', { r: ok })]);
      const ignoring = streamGate(ctx, opened(), 'ignore')(ignored.attempts)(newCall(), FIRST_ATTEMPT);
      expectObservable(ignoring).toBe('(r|)', { r: ok });
      const refused = fakeAttempts([cold('(r|)', { r: ok })]);
      let failure: unknown;
      const refusing = streamGate(ctx, opened(), 'refuse')(refused.attempts)(newCall(), FIRST_ATTEMPT);
      refusing.subscribe({ error: (e) => (failure = e) });
      flush();
      expect(failure).toBeInstanceOf(CircuitOpen);
      expect(refused.count()).toBe(0);
    });
  });

  it('wait: an open breaker holds the attempt at stream_gate until the cool-down ends, then it is the probe', () => {
    ts.run(({ cold, expectObservable, flush }) => {
      const { ctx, waits } = recoveryContext();
      const breaker = opened();
      const probe = cold('-(r|)', { r: ok });
      const { attempts, phases } = fakeAttempts([probe], waits);
      const waiting = streamGate(ctx, breaker, 'wait')(attempts)(newCall(), FIRST_ATTEMPT);
      expectObservable(waiting).toBe('101ms (r|)', { r: ok });
      const seen: string[] = [];
      ts.schedule(() => seen.push(`${waits.innermost} ${ts.actions.length}`), 50);
      flush();
      expect(seen).toEqual(['stream_gate 1']); // the one action is the cool-down's timer
      expect(phases).toEqual(['model_request']);
      expect(breaker.state).toBe('closed');
    });
  });

  it('a cancel at the gate ends the wait: no attempt, no probe claimed, nothing left scheduled', () => {
    ts.run(({ cold, flush }) => {
      const { ctx, token } = recoveryContext();
      const breaker = opened();
      const { attempts, count } = fakeAttempts([cold('(r|)', { r: ok })]);
      const out = streamGate(ctx, breaker, 'wait')(attempts)(newCall(), FIRST_ATTEMPT);
      const sub = out.subscribe();
      ts.schedule(() => {
        token.cancel('stop');
        sub.unsubscribe(); // what the run's end does
      }, 50);
      flush();
      expect(count()).toBe(0);
      expect([breaker.state, breaker.waitMs(100)]).toEqual(['open', 0]);
      expect(ts.actions).toEqual([]);
    });
  });
});
