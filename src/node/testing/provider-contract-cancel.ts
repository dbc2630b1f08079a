/**
 * The cancel parts of `providerContract`: a cancel at every checkpoint of a model call lands its
 * `run_cancelled` before `cancel()` returns, and the server sees the socket close.
 */
import { CancelSignal } from '../../cancel/cancel-signal.js';
import type { RunEvent } from '../../events.js';
import type { ContractFramework } from './kit.js';
import type { ProviderKit, ScriptedAnswer } from './provider-kit.js';
import {
  TEST_TIMEOUT_MS,
  TEXT,
  blockingTool,
  expectAllAccepted,
  record,
  terminal,
  within,
  withWire,
} from './provider-contract-support.js';
import type { WireScript } from './wire-server.js';

const REASON = 'conformance stop';

const SLOW_CALL: ScriptedAnswer = {
  text: [],
  toolCalls: [{ callId: 'call_slow_1', name: 'slow_lookup', argumentChunks: ['{"city":"Paris"}'] }],
  finishReason: 'tool_calls',
  usage: { inputTokens: 8, outputTokens: 6 },
};

interface Checkpoint {
  readonly name: string;
  readonly stream: boolean;
  readonly script: (kit: ProviderKit) => WireScript;
  /** What the run must have emitted before the cancel. */
  readonly before: RunEvent['type'];
  readonly phase: string;
}

const CHECKPOINTS: readonly Checkpoint[] = [
  {
    name: 'a streamed request before its response headers',
    stream: true,
    script: () => ({ stall: 'before_headers' }),
    before: 'model_request_started',
    phase: 'model_request',
  },
  {
    name: 'a streamed request after its headers, before its first event',
    stream: true,
    script: () => ({ stall: 'after_headers' }),
    before: 'model_request_started',
    phase: 'model_request',
  },
  {
    name: 'mid-stream, after the first text delta',
    stream: true,
    script: (kit) => ({ frames: kit.wire.cut(TEXT), then: 'hold' }),
    before: 'text_delta',
    phase: 'model_stream',
  },
  {
    name: 'a non-streamed request before its response headers',
    stream: false,
    script: () => ({ stall: 'before_headers' }),
    before: 'model_request_started',
    phase: 'model_request',
  },
  {
    name: 'a non-streamed request after its headers, before its body',
    stream: false,
    script: () => ({ stall: 'after_headers' }),
    before: 'model_request_started',
    phase: 'model_request',
  },
];

export function cancelContract(framework: ContractFramework, kit: ProviderKit): void {
  const { describe, it, expect } = framework;

  /** Cancels once `before` was emitted (and the server has the request); checks what cancel() left. */
  async function cancelAt(recorded: ReturnType<typeof record>, signal: CancelSignal, phase: string): Promise<void> {
    signal.cancel(REASON);
    // Synchronously after cancel() returned: the terminal is out and the Observable completed.
    expect(recorded.completed()).toBe(true);
    const end = terminal(recorded.events);
    expect(end.type === 'run_cancelled' && [end.type, end.reason, end.phase]).toEqual(['run_cancelled', REASON, phase]);
  }

  describe('cancel at every checkpoint of a model call', () => {
    for (const point of CHECKPOINTS) {
      it(
        `${point.name}: run_cancelled (phase ${point.phase}) before cancel() returns; the server sees the socket ` +
          'close unfinished',
        () =>
          withWire(kit, async (server, provider) => {
            server.enqueue(point.script(kit));
            const signal = new CancelSignal();
            const recorded = record(provider, [], { cancel: signal, stream: point.stream });
            const request = await within(server.request(0), 'the request');
            await within(recorded.next(point.before), `the ${point.before} event`);
            await cancelAt(recorded, signal, point.phase);
            await within(request.whenClosed, 'the socket closing');
            expect(request.finished).toBe(false);
            expect(server.requests.length).toBe(1);
            expectAllAccepted(framework, server);
            const end = terminal(recorded.events);
            if (point.phase === 'model_stream' && end.type === 'run_cancelled') {
              // The streamed text is kept in `partial`, marked interrupted.
              const streamed = recorded.events.flatMap((e) => (e.type === 'text_delta' ? [e.delta] : [])).join('');
              const last = end.partial[end.partial.length - 1];
              expect(last?.type === 'assistant' && [last.text, last.interrupted]).toEqual([streamed, true]);
            }
          }),
        TEST_TIMEOUT_MS,
      );
    }

    it(
      'during the rescue of a cut stream: run_cancelled (phase rescue) before cancel() returns; the rescue socket ' +
        'closes unfinished',
      () =>
        withWire(kit, async (server, provider) => {
          server.enqueue({ frames: kit.wire.cut(TEXT), then: 'cut' }, { stall: 'before_headers' });
          const signal = new CancelSignal();
          const recorded = record(provider, [], { cancel: signal });
          const rescue = await within(server.request(1), 'the rescue request');
          await cancelAt(recorded, signal, 'rescue');
          await within(rescue.whenClosed, 'the rescue socket closing');
          expect([rescue.route, rescue.finished, server.requests.length]).toEqual(['json', false, 2]);
          expectAllAccepted(framework, server);
        }),
      TEST_TIMEOUT_MS,
    );

    it(
      'during the backoff after a 429 with retry-after: run_cancelled (phase backoff) before cancel() returns; no ' +
        'second request',
      () =>
        withWire(kit, async (server, provider) => {
          const limited = kit.wire.error({ status: 429, message: 'rate limited', retryAfterMs: 30_000 });
          server.enqueue({ reply: limited });
          const signal = new CancelSignal();
          const recorded = record(provider, [], { cancel: signal });
          await within(recorded.next('retry_scheduled'), 'the retry_scheduled event');
          await cancelAt(recorded, signal, 'backoff');
          expect(server.requests.length).toBe(1);
        }),
      TEST_TIMEOUT_MS,
    );

    it(
      'during a tool the model called: run_cancelled (phase tool_call) before cancel() returns; no further request',
      () =>
        withWire(kit, async (server, provider) => {
          server.enqueue({ answer: SLOW_CALL });
          const slow = blockingTool('slow_lookup');
          const signal = new CancelSignal();
          const recorded = record(provider, [slow.tool], { cancel: signal });
          await within(slow.started, 'the tool starting');
          await cancelAt(recorded, signal, 'tool_call');
          const request = server.requests[0]!;
          await within(request.whenClosed, 'the model response closing');
          expect(request.finished).toBe(true); // the answer was whole; the tool was what the cancel stopped
          expect(server.requests.length).toBe(1);
          expectAllAccepted(framework, server);
        }),
      TEST_TIMEOUT_MS,
    );
  });
}
