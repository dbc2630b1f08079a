/**
 * The tool-loop part of `providerContract`: three turns (one call, two parallel calls, a final text) in
 * the provider's own history format, every request valid on the wire, and the kit's validator proven
 * to refuse what the real API refuses.
 */
import type { RunEvent } from '../../events.js';
import type { ContractFramework } from './kit.js';
import type { ProviderKit, ScriptedAnswer } from './provider-kit.js';
import {
  TEST_TIMEOUT_MS,
  counts,
  expectAllAccepted,
  fixedTool,
  record,
  routes,
  terminal,
  within,
  withWire,
} from './provider-contract-support.js';
import type { WireRecord } from './wire-server.js';

const TURNS: readonly ScriptedAnswer[] = [
  {
    reasoning: ['The user asks about Paris.', ' Weather first, then time and forecast.'],
    text: ['Checking the weather.'],
    toolCalls: [{ callId: 'call_loop_1', name: 'get_weather', argumentChunks: ['{"city":', '"Paris"}'] }],
    finishReason: 'tool_calls',
    usage: { inputTokens: 10, outputTokens: 2 },
  },
  {
    text: [],
    toolCalls: [
      { callId: 'call_loop_2', name: 'get_time', argumentChunks: ['{"zone":"Europe/Paris"}'] },
      { callId: 'call_loop_3', name: 'get_forecast', argumentChunks: ['{"city":"Paris",', '"days":2}'] },
    ],
    finishReason: 'tool_calls',
    usage: { inputTokens: 20, outputTokens: 4 },
  },
  {
    text: ['Sunny at 14:05,', ' rain tomorrow.'],
    toolCalls: [],
    finishReason: 'stop',
    usage: { inputTokens: 30, outputTokens: 6 },
  },
];
/** Each tool's output: distinct words the next requests must carry. */
const OUTPUTS = { get_weather: 'sunny-21C-paris', get_time: 'time-14-05-cet', get_forecast: 'rain-tomorrow-paris' };

export function loopContract(framework: ContractFramework, kit: ProviderKit): void {
  const { describe, it, expect } = framework;

  /** Runs the three turns; returns the run's events and the three requests. */
  const toolLoop = (body: (events: RunEvent[], requests: readonly WireRecord[]) => void) =>
    withWire(kit, async (server, provider) => {
      const calls: unknown[] = [];
      const tools = Object.entries(OUTPUTS).map(([name, output]) => fixedTool(name, output, calls));
      server.enqueue(...TURNS.map((answer) => ({ answer })));
      const events = await within(record(provider, tools).done, 'the tool loop');
      expect(calls).toEqual([{ city: 'Paris' }, { zone: 'Europe/Paris' }, { city: 'Paris', days: 2 }]);
      expect(routes(server)).toEqual(['stream', 'stream', 'stream']);
      expectAllAccepted(framework, server);
      body(events, server.requests);
    });

  describe('a tool loop of three turns', () => {
    it(
      'one call, two parallel calls, a final text: every request valid on the wire, each carrying the results so ' +
        'far; finish reasons and usage per turn and summed on the terminal',
      () =>
        toolLoop((events, requests) => {
          // What each request carries of the tools' outputs: none, the first, all three.
          const carried = requests.map((r) =>
            Object.values(OUTPUTS).filter((output) => JSON.stringify(r.body).includes(output)),
          );
          expect(carried).toEqual([[], [OUTPUTS.get_weather], Object.values(OUTPUTS)]);
          const completed = events.flatMap((e) =>
            e.type === 'model_response_completed' ? [[e.finishReason, e.usage.inputTokens, e.usage.outputTokens]] : [],
          );
          expect(completed).toEqual([
            ['tool_calls', 10, 2],
            ['tool_calls', 20, 4],
            ['stop', 30, 6],
          ]);
          const started = events.flatMap((e) => (e.type === 'tool_call_started' ? [[e.callId, e.name]] : []));
          expect(started).toEqual([
            ['call_loop_1', 'get_weather'],
            ['call_loop_2', 'get_time'],
            ['call_loop_3', 'get_forecast'],
          ]);
          const end = terminal(events);
          expect(end.type === 'run_completed' && [end.output, end.finishReason, counts(end.usage)]).toEqual([
            'Sunny at 14:05, rain tomorrow.',
            'stop',
            { inputTokens: 60, outputTokens: 12, totalTokens: 72, reported: true },
          ]);
        }),
      TEST_TIMEOUT_MS,
    );

    it(
      "the kit's validateRequest accepts the loop's last request and refuses each of its invalid variants",
      () =>
        toolLoop((_events, requests) => {
          const last = requests[requests.length - 1]!;
          expect(kit.wire.validateRequest(last)).toBe(undefined);
          const variants = kit.wire.invalidVariants(structuredClone(last.body));
          expect(variants.length >= 1).toBe(true);
          const accepted = variants.filter((v) => kit.wire.validateRequest({ ...last, body: v.body }) === undefined);
          expect(accepted.map((v) => v.fault)).toEqual([]);
        }),
      TEST_TIMEOUT_MS,
    );
  });
}
