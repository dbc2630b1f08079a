/**
 * Guarantee 4: cancelled is not failed, across recovery, and usage across attempts:
 * a cancel is never retried, never feeds the breaker, never triggers a
 * fallback and emits no recovery event; a timeout or an error *named* like an
 * abort is not a cancel (cancellation is which token fired). Usage sums every
 * attempt, rescue and fallback that returned usage. Virtual time (run mode).
 */
import { NEVER, Observable, Subject, concat, of, throwError } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import { CancelSignal } from '../src/cancel/index.js';
import { breakerFor } from '../src/engine/recovery/breaker.js';
import { defineAgent } from '../src/engine/define-agent.js';
import { run } from '../src/engine/run.js';
import { ModelCallError } from '../src/errors.js';
import type { RunEvent, RunEventType } from '../src/events.js';
import type { TokenCounts } from '../src/items.js';
import type { ModelEvent } from '../src/model/types.js';
import { scriptedModel, type ScriptedStep } from '../src/testing/index.js';
import { tool } from '../src/tools/tool.js';

const ts = (): TestScheduler => new TestScheduler((a, e) => expect(a).toEqual(e));
const down = new ModelCallError('overloaded', { status: 529, retryable: true });
const RECOVERY: RunEventType[] = ['retry_scheduled', 'fallback_activated'];

/** Runs a primary/fallback agent in virtual time; `cancelOn` cancels synchronously inside the handler of that event. */
function scenario(
  primarySteps: (ScriptedStep | string)[],
  cancelOn: (e: RunEvent) => boolean,
  extra: { runMs?: number } = {},
) {
  const scheduler = ts();
  let result:
    | { events: RunEvent[]; primary: ReturnType<typeof scriptedModel>; fallback: ReturnType<typeof scriptedModel> }
    | undefined;
  scheduler.run(({ flush }) => {
    const primary = scriptedModel(primarySteps, { id: 'primary' });
    const fallback = scriptedModel(['fallback answer'], { id: 'fallback' });
    const agent = defineAgent({ name: 'g4', instructions: '', model: primary, fallbackModel: fallback });
    const cancel = new CancelSignal();
    const events: RunEvent[] = [];
    const opts = {
      cancel,
      retry: { maxRetries: 2, initialDelayMs: 100 },
      random: () => 0.5,
      ...(extra.runMs ? { deadlines: { runMs: extra.runMs } } : {}),
    };
    run(agent, 'q', opts).subscribe((e) => {
      events.push(e);
      if (cancelOn(e)) cancel.cancel('stop');
    });
    flush();
    expect(scheduler.actions).toEqual([]);
    result = { events, primary, fallback };
  });
  return result!;
}

describe('guarantee 4: a cancel at any moment of recovery is not a failure', () => {
  // [name, primary steps, cancel inside this event, phase, genuine failures before the cancel]
  const cases: [string, (ScriptedStep | string)[], (e: RunEvent) => boolean, string, number][] = [
    [
      'inside model_request_started (before the provider is called)',
      ['never'],
      (e) => e.type === 'model_request_started',
      'model_request',
      0,
    ],
    [
      'inside a text_delta (mid-stream)',
      [{ text: ['a', 'b'], hold: NEVER }],
      (e) => e.type === 'text_delta',
      'model_stream',
      0,
    ],
    [
      'inside retry_scheduled (before the sleep)',
      [{ error: down }, 'x'],
      (e) => e.type === 'retry_scheduled',
      'backoff',
      1,
    ],
    [
      "inside the retry's model_request_started",
      [{ error: down }, 'x'],
      (e) => e.type === 'model_request_started' && e.attempt === 2,
      'model_request',
      1,
    ],
    // the stream failure is not counted yet: the attempt's outcome is the rescue's, which the cancel ends
    [
      "inside the rescue's model_request_started",
      [{ text: 'a', error: down }, 'x'],
      (e) => e.type === 'model_request_started' && !e.stream,
      'rescue',
      0,
    ],
  ];
  for (const [name, steps, cancelOn, phase, failures] of cases) {
    it(`cancel ${name}: run_cancelled, no new request, no breaker feed, no fallback`, () => {
      const { events, primary, fallback } = scenario(steps, cancelOn);
      const i = events.findIndex(cancelOn);
      expect(events.slice(i + 1).map((e) => e.type)).toEqual(['run_cancelled']);
      expect(events.at(-1)).toMatchObject({ type: 'run_cancelled', reason: 'stop', phase });
      // a cancel inside model_request_started stops that request before the provider is called
      const started = events.filter((e) => e.type === 'model_request_started').length;
      expect(primary.calls.length).toBe(started - (events[i]!.type === 'model_request_started' ? 1 : 0));
      expect(fallback.calls.length).toBe(0);
      expect(events.filter((e) => RECOVERY.includes(e.type) && events.indexOf(e) > i)).toEqual([]);
      expect([breakerFor(primary, undefined).state, breakerFor(primary, undefined).failures]).toEqual([
        'closed',
        failures,
      ]);
    });
  }

  it('the run deadline during a stall is a cancel: no retry, no fallback, the breaker stays closed', () => {
    const { events, primary, fallback } = scenario([{ hold: NEVER }], () => false, { runMs: 500 });
    expect(events.map((e) => e.type)).toEqual([
      'run_started',
      'turn_started',
      'model_request_started',
      'run_cancelled',
    ]);
    expect(events.at(-1)).toMatchObject({ reason: { type: 'deadline' }, phase: 'model_request' });
    expect([breakerFor(primary, undefined).failures, fallback.calls.length]).toEqual([0, 0]);
  });

  it('a provider that errors on the abort before the run sees it: the cancel still wins (no retry, no fallback, no breaker count)', () => {
    const scheduler = ts();
    scheduler.run(({ flush }) => {
      const ac = new AbortController();
      const aborted = new Subject<void>();
      ac.signal.addEventListener('abort', () => aborted.next()); // registered before the run links the signal
      const primary = {
        id: 'primary',
        call: () =>
          new Observable<ModelEvent>((s) =>
            aborted.subscribe(() => s.error(new ModelCallError('aborted', { retryable: true }))),
          ),
      };
      const fallback = scriptedModel(['fallback answer'], { id: 'fallback' });
      const agent = defineAgent({ name: 'g4', instructions: '', model: primary, fallbackModel: fallback });
      const events: RunEvent[] = [];
      run(agent, 'q', { signal: ac.signal, random: () => 0.5 }).subscribe((e) => events.push(e));
      scheduler.schedule(() => ac.abort('stop'), 10);
      flush();
      expect(events.map((e) => e.type)).toEqual([
        'run_started',
        'turn_started',
        'model_request_started',
        'run_cancelled',
      ]);
      expect(events.at(-1)).toMatchObject({ reason: 'stop', phase: 'model_request' });
      expect([breakerFor(primary, undefined).failures, fallback.calls.length]).toEqual([0, 0]);
      expect(scheduler.actions).toEqual([]);
    });
  });

  it('an error named like an abort is a failure, not a cancel: retried, then the fallback serves', () => {
    const abortLike = Object.assign(new ModelCallError('The operation was aborted', { retryable: true }), {
      name: 'AbortError',
    });
    const { events, primary, fallback } = scenario(
      [{ error: abortLike }, { error: abortLike }, { error: abortLike }],
      () => false,
    );
    expect(events.filter((e) => RECOVERY.includes(e.type)).map((e) => e.type)).toEqual([
      'retry_scheduled',
      'retry_scheduled',
      'fallback_activated',
    ]);
    expect(events.at(-1)).toMatchObject({ type: 'run_completed', output: 'fallback answer' });
    expect([primary.calls.length, fallback.calls.length]).toEqual([3, 1]);
    expect(breakerFor(primary, undefined).state).toBe('open'); // 3 consecutive failures
  });
});

describe('usage sums every attempt, rescue and fallback that returned usage', () => {
  const u = (n: number): TokenCounts => ({ inputTokens: n, outputTokens: 10 * n, totalTokens: 11 * n });
  const respond = (usage: TokenCounts, text: string): ModelEvent => ({
    type: 'response',
    response: { text, toolCalls: [], finishReason: 'stop', usage },
  });

  it('an attempt that returned usage then failed + a fallback turn + a rescued turn + a retried turn', () => {
    const scheduler = ts();
    scheduler.run(({ flush }) => {
      const ping = tool({ name: 'ping', description: 'p', parameters: z.object({}), execute: () => 'pong' });
      const primary = scriptedModel(
        [
          // turn 1: a response with usage 1, then the stream fails: billed; its rescue fails (not retryable): the
          // fallback answers
          {
            events: () =>
              concat(
                of(respond(u(1), 'lost')),
                throwError(() => new ModelCallError('broken', { status: 500 })),
              ),
          },
          { error: new ModelCallError('bad', { status: 400 }) },
          // turn 2: the stream breaks after a delta; the rescue answers with usage 4
          { text: 'x', error: down },
          { text: 'rescued', toolCalls: [{ name: 'ping' }], usage: u(4) },
          // turn 3: a transient failure, then the retry answers with usage 8
          { error: down },
          { text: 'done', usage: u(8) },
        ],
        { id: 'primary' },
      );
      const fallback = scriptedModel([{ text: 'fb', toolCalls: [{ name: 'ping' }], usage: u(2) }], { id: 'fallback' });
      const agent = defineAgent({
        name: 'u',
        instructions: '',
        model: primary,
        fallbackModel: fallback,
        tools: [ping],
      });
      const events: RunEvent[] = [];
      run(agent, 'q', { random: () => 0.5 }).subscribe((e) => events.push(e));
      flush();
      expect(events.filter((e) => RECOVERY.includes(e.type)).map((e) => e.type)).toEqual([
        'fallback_activated',
        'retry_scheduled',
      ]);
      expect(events.at(-1)).toMatchObject({ type: 'run_completed', output: 'done', usage: u(1 + 2 + 4 + 8) });
    });
  });

  it('a cancelled run reports the usage of what completed before the cancel', () => {
    const scheduler = ts();
    scheduler.run(({ flush }) => {
      const ping = tool({ name: 'ping', description: 'p', parameters: z.object({}), execute: () => 'pong' });
      const primary = scriptedModel([{ toolCalls: [{ name: 'ping' }], usage: u(3) }, { hold: NEVER }], {
        id: 'primary',
      });
      const agent = defineAgent({ name: 'u', instructions: '', model: primary, tools: [ping] });
      const cancel = new CancelSignal();
      const events: RunEvent[] = [];
      run(agent, 'q', { cancel }).subscribe((e) => events.push(e));
      scheduler.schedule(() => cancel.cancel('stop'), 10);
      flush();
      expect(events.at(-1)).toMatchObject({ type: 'run_cancelled', usage: u(3) });
    });
  });
});
