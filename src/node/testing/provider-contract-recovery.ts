/**
 * The recovery parts of `providerContract`: the first-event, idle and request deadlines, retries with a
 * server's retry-after, a 400 not retried, and the rescue of a cut stream and of an in-stream error.
 * Deadlines are short real milliseconds (the sockets are real), but no check asserts a duration.
 */
import type { RunOptions } from '../../engine/types.js';
import type { RunEvent } from '../../events.js';
import type { ContractFramework } from './kit.js';
import type { ProviderKit } from './provider-kit.js';
import {
  FINAL,
  TEST_TIMEOUT_MS,
  TEXT,
  errorFields,
  expectAllAccepted,
  record,
  routes,
  terminal,
  textOf,
  within,
  withWire,
} from './provider-contract-support.js';
import type { WireScript, WireServer } from './wire-server.js';

/** A deadline short enough to expire in a test, long enough that a loaded machine sends a request in it (ms). */
const SHORT_MS = 500;
/** The retry-after the 429 asks for (ms, a whole second so every API can say it). */
const RETRY_AFTER_MS = 1_000;

/** `[stopReason, { name, kind }]` of a run_failed terminal (undefined for another terminal). */
function failure(events: readonly RunEvent[]): unknown {
  const end = terminal(events);
  return end.type === 'run_failed' ? [end.stopReason, errorFields(end.error, ['kind'])] : end.type;
}

/** `[attempt, cause, stream, error name, error kind]` of each model_request_started after the first. */
function laterAttempts(events: readonly RunEvent[]): unknown[] {
  return events.flatMap((e) =>
    e.type === 'model_request_started' && e.attempt > 1
      ? [[e.attempt, e.cause, e.stream, e.error?.name, e.error?.['kind']]]
      : [],
  );
}

export function recoveryContract(framework: ContractFramework, kit: ProviderKit): void {
  const { describe, it, expect } = framework;

  /** Runs with `options` on a server answering `scripts`; returns the events once the run ended. */
  const runOn = async (
    server: WireServer,
    provider: Parameters<typeof record>[0],
    scripts: WireScript[],
    options: RunOptions,
  ) => {
    server.enqueue(...scripts);
    return within(record(provider, [], options).done, 'the run');
  };

  /** The run completed with `answer`'s text. */
  const completedWith = (events: readonly RunEvent[], text: string) => {
    const end = terminal(events);
    expect(end.type === 'run_completed' && [end.type, end.output]).toEqual(['run_completed', text]);
  };

  describe('deadlines', () => {
    it(
      'first-event deadline: headers and then silence fail the call with TimeoutError first_event; the client ' +
        'closed the socket',
      () =>
        withWire(kit, async (server, provider) => {
          const events = await runOn(server, provider, [{ stall: 'after_headers' }], {
            deadlines: { firstEventMs: SHORT_MS },
            retry: false,
          });
          expect(failure(events)).toEqual(['model_error', { name: 'TimeoutError', kind: 'first_event' }]);
          expect(routes(server)).toEqual(['stream']);
          await within(server.requests[0]!.whenClosed, 'the stalled socket closing');
          expect(server.requests[0]!.finished).toBe(false);
          expectAllAccepted(framework, server);
        }),
      TEST_TIMEOUT_MS,
    );

    it(
      'idle deadline: a stream silent after its first text delta fails with TimeoutError idle and is rescued ' +
        'by one non-streamed request',
      () =>
        withWire(kit, async (server, provider) => {
          const scripts: WireScript[] = [{ frames: kit.wire.cut(TEXT), then: 'hold' }, { answer: FINAL }];
          const events = await runOn(server, provider, scripts, {
            deadlines: { firstEventMs: 30_000, idleMs: SHORT_MS },
          });
          expect(laterAttempts(events)).toEqual([[2, 'rescue', false, 'TimeoutError', 'idle']]);
          completedWith(events, textOf(FINAL));
          expect(routes(server)).toEqual(['stream', 'json']);
          await within(server.requests[0]!.whenClosed, 'the stalled socket closing');
          expect(server.requests[0]!.finished).toBe(false);
          expectAllAccepted(framework, server);
        }),
      TEST_TIMEOUT_MS,
    );

    it(
      'request deadline: a non-streamed request without an answer fails with TimeoutError request; the client ' +
        'closed the socket',
      () =>
        withWire(kit, async (server, provider) => {
          const events = await runOn(server, provider, [{ stall: 'before_headers' }], {
            stream: false,
            deadlines: { requestMs: SHORT_MS },
            retry: false,
          });
          expect(failure(events)).toEqual(['model_error', { name: 'TimeoutError', kind: 'request' }]);
          expect(routes(server)).toEqual(['json']);
          await within(server.requests[0]!.whenClosed, 'the stalled socket closing');
          expect(server.requests[0]!.finished).toBe(false);
          expectAllAccepted(framework, server);
        }),
      TEST_TIMEOUT_MS,
    );
  });

  describe('retries', () => {
    it(
      `a 429 with retry-after (${RETRY_AFTER_MS} ms), then success: retry_scheduled waits exactly that long, ` +
        'two requests',
      () =>
        withWire(kit, async (server, provider) => {
          const limited = kit.wire.error({ status: 429, message: 'rate limited', retryAfterMs: RETRY_AFTER_MS });
          const events = await runOn(server, provider, [{ reply: limited }, { answer: TEXT }], {});
          const retries = events.flatMap((e) =>
            e.type === 'retry_scheduled'
              ? [[e.attempt, e.delayMs, errorFields(e.error, ['status', 'retryable', 'retryAfterMs'])]]
              : [],
          );
          expect(retries).toEqual([
            [2, RETRY_AFTER_MS, { name: 'ModelCallError', status: 429, retryable: true, retryAfterMs: RETRY_AFTER_MS }],
          ]);
          expect(laterAttempts(events)).toEqual([[2, 'retry', true, 'ModelCallError', undefined]]);
          completedWith(events, textOf(TEXT));
          expect(server.requests.length).toBe(2);
          expectAllAccepted(framework, server);
        }),
      TEST_TIMEOUT_MS,
    );

    it(
      'a 400 is not retried: run_failed (model_error) with a non-retryable ModelCallError, after one request',
      () =>
        withWire(kit, async (server, provider) => {
          const bad = kit.wire.error({ status: 400, message: 'invalid request' });
          const events = await runOn(server, provider, [{ reply: bad }], {});
          const end = terminal(events);
          expect(
            end.type === 'run_failed' && [end.stopReason, errorFields(end.error, ['status', 'retryable'])],
          ).toEqual(['model_error', { name: 'ModelCallError', status: 400, retryable: false }]);
          expect(server.requests.length).toBe(1);
        }),
      TEST_TIMEOUT_MS,
    );
  });

  describe('rescue of a broken stream', () => {
    it(
      'a stream cut after its first text delta is rescued by one non-streamed request, whose answer ends the run',
      () =>
        withWire(kit, async (server, provider) => {
          const scripts: WireScript[] = [{ frames: kit.wire.cut(TEXT), then: 'cut' }, { answer: FINAL }];
          const events = await runOn(server, provider, scripts, {});
          const [rescue] = laterAttempts(events) as [unknown[]];
          expect(rescue?.slice(0, 4)).toEqual([2, 'rescue', false, 'ModelCallError']);
          expect(laterAttempts(events).length).toBe(1);
          completedWith(events, textOf(FINAL));
          expect(routes(server)).toEqual(['stream', 'json']);
          expectAllAccepted(framework, server);
        }),
      TEST_TIMEOUT_MS,
    );

    it(
      'an in-stream error event after the first text delta is a ModelCallError; the stream is rescued the same way',
      () =>
        withWire(kit, async (server, provider) => {
          const scripts: WireScript[] = [{ frames: kit.wire.streamError(TEXT), then: 'end' }, { answer: FINAL }];
          const events = await runOn(server, provider, scripts, {});
          const [rescue] = laterAttempts(events) as [unknown[]];
          expect(rescue?.slice(0, 4)).toEqual([2, 'rescue', false, 'ModelCallError']);
          expect(laterAttempts(events).length).toBe(1);
          completedWith(events, textOf(FINAL));
          expect(routes(server)).toEqual(['stream', 'json']);
          expectAllAccepted(framework, server);
        }),
      TEST_TIMEOUT_MS,
    );
  });
}
