/** The streaming parts of `providerContract`: text and tool calls into loopctl's events, usage, malformed events. */
import { lastValueFrom, toArray } from 'rxjs';
import type { ModelEvent, ModelRequest, ModelResponse, ToolSpec } from '../../model/types.js';
import type { ContractFramework } from './kit.js';
import type { ProviderKit, ScriptedAnswer } from './provider-kit.js';
import {
  TEST_TIMEOUT_MS,
  TEXT,
  TOOLS,
  counts,
  errorFields,
  expectAllAccepted,
  record,
  routes,
  terminal,
  textOf,
  within,
  withWire,
} from './provider-contract-support.js';

const OBJECT = { type: 'object', properties: {}, additionalProperties: true };
const SPECS: ToolSpec[] = [
  { name: 'get_weather', description: 'The weather in a city', parameters: OBJECT },
  { name: 'get_time', description: 'The time in a zone', parameters: OBJECT },
];
const request = (stream: boolean, tools: readonly ToolSpec[] = []): ModelRequest => ({
  instructions: 'Answer briefly.',
  items: [{ type: 'user', id: 'u1', text: 'What is the weather in Paris?' }],
  tools,
  stream,
});

/** The provider-neutral part of a response: text, calls (arguments parsed), finish reason, the three counts. */
function neutral(response: ModelResponse | undefined): unknown {
  if (!response) return undefined;
  const u = response.usage;
  return {
    text: response.text,
    toolCalls: response.toolCalls.map((c) => ({ callId: c.callId, name: c.name, arguments: parsed(c.arguments) })),
    finishReason: response.finishReason,
    usage: u && counts(u),
  };
}

/** What the response to `answer` must be, in the shape of {@link neutral}. */
const expected = (answer: ScriptedAnswer): unknown => ({
  text: textOf(answer),
  toolCalls: answer.toolCalls.map((c) => ({
    callId: c.callId,
    name: c.name,
    arguments: parsed(c.argumentChunks.join('')),
  })),
  finishReason: answer.finishReason,
  usage: { ...answer.usage, totalTokens: answer.usage.inputTokens + answer.usage.outputTokens },
});

function parsed(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return `not JSON: ${text}`;
  }
}

/**
 * The tool-call deltas grouped per `index`, in order of first appearance: the first callId and name, the
 * joined arguments (parsed).
 */
function streamedCalls(events: readonly ModelEvent[]): unknown[] {
  const calls = new Map<number, { callId?: string; name?: string; arguments: string }>();
  for (const e of events) {
    if (e.type !== 'tool_call_delta') continue;
    const call = calls.get(e.index) ?? { arguments: '' };
    calls.set(e.index, call);
    call.callId ??= e.callId;
    call.name ??= e.name;
    call.arguments += e.argumentsDelta;
  }
  return [...calls.values()].map((c) => ({ callId: c.callId, name: c.name, arguments: parsed(c.arguments) }));
}

export function streamContract(framework: ContractFramework, kit: ProviderKit): void {
  const { describe, it, expect } = framework;
  const call = async (answer: ScriptedAnswer, stream: boolean, tools: readonly ToolSpec[] = []) => {
    let events: ModelEvent[] = [];
    await withWire(kit, async (server, provider) => {
      server.enqueue({ answer });
      events = await within(lastValueFrom(provider.call(request(stream, tools)).pipe(toArray())), 'the call');
      expect(routes(server)).toEqual([stream ? 'stream' : 'json']);
      expectAllAccepted(framework, server);
    });
    const responses = events.filter((e) => e.type === 'response');
    expect(responses.length).toBe(1);
    expect(events[events.length - 1]?.type).toBe('response');
    return { events, response: responses[0]?.type === 'response' ? responses[0].response : undefined };
  };

  describe('streaming into loopctl events', () => {
    it(
      'a streamed text: one text_delta per wire delta, then one response with finishReason stop and the usage',
      async () => {
        const { events, response } = await call(TEXT, true);
        const deltas = events.flatMap((e) => (e.type === 'text_delta' ? [e.delta] : []));
        expect(deltas).toEqual([...TEXT.text]);
        expect(events.map((e) => e.type)).toEqual([...TEXT.text.map(() => 'text_delta'), 'response']);
        expect(neutral(response)).toEqual(expected(TEXT));
      },
      TEST_TIMEOUT_MS,
    );

    it(
      'a non-streamed text: one response (no delta) with the same text, finishReason and usage',
      async () => {
        const { events, response } = await call(TEXT, false);
        expect(events.map((e) => e.type)).toEqual(['response']);
        expect(neutral(response)).toEqual(expected(TEXT));
      },
      TEST_TIMEOUT_MS,
    );

    it(
      'an answer cut by the output token limit: finishReason length, streamed and not',
      async () => {
        const cut: ScriptedAnswer = { ...TEXT, finishReason: 'length' };
        expect(neutral((await call(cut, true)).response)).toEqual(expected(cut));
        expect(neutral((await call(cut, false)).response)).toEqual(expected(cut));
      },
      TEST_TIMEOUT_MS,
    );

    it(
      'streamed tool calls: text deltas, then tool_call_delta per call (its id and name, arguments joining to ' +
        'the JSON sent), then one response with both calls and finishReason tool_calls',
      async () => {
        const { events, response } = await call(TOOLS, true, SPECS);
        expect(events.flatMap((e) => (e.type === 'text_delta' ? [e.delta] : [])).join('')).toBe(textOf(TOOLS));
        expect(streamedCalls(events)).toEqual((expected(TOOLS) as { toolCalls: unknown[] }).toolCalls);
        expect(neutral(response)).toEqual(expected(TOOLS));
      },
      TEST_TIMEOUT_MS,
    );

    it(
      'non-streamed tool calls: one response with both calls, their ids, names and arguments',
      async () => {
        const { response } = await call(TOOLS, false, SPECS);
        expect(neutral(response)).toEqual(expected(TOOLS));
      },
      TEST_TIMEOUT_MS,
    );

    it(
      'in a run: the event sequence of a streamed answer, and its usage on model_response_completed and the terminal',
      () =>
        withWire(kit, async (server, provider) => {
          server.enqueue({ answer: TEXT });
          const events = await within(record(provider, []).done, 'the run');
          expect(events.map((e) => e.type)).toEqual([
            'run_started',
            'turn_started',
            'model_request_started',
            ...TEXT.text.map(() => 'text_delta'),
            'model_response_completed',
            'turn_completed',
            'run_completed',
          ]);
          const usage = { inputTokens: 12, outputTokens: 3, totalTokens: 15, reported: true };
          const completed = events.find((e) => e.type === 'model_response_completed');
          expect(
            completed?.type === 'model_response_completed' && [completed.finishReason, counts(completed.usage)],
          ).toEqual(['stop', usage]);
          const end = terminal(events);
          expect(end.type === 'run_completed' && [end.output, end.finishReason, counts(end.usage)]).toEqual([
            textOf(TEXT),
            'stop',
            usage,
          ]);
          expectAllAccepted(framework, server);
        }),
      TEST_TIMEOUT_MS,
    );

    it(
      'a malformed event: run_failed (model_error) with a ModelOutputError malformed_chunk naming the field, after ' +
        'one request (not retried, not rescued)',
      () =>
        withWire(kit, async (server, provider) => {
          const { frames, field } = kit.wire.malformed();
          server.enqueue({ frames, then: 'end' });
          const events = await within(record(provider, []).done, 'the run');
          const end = terminal(events);
          expect(end.type).toBe('run_failed');
          if (end.type !== 'run_failed') return;
          expect(end.stopReason).toBe('model_error');
          expect(errorFields(end.error, ['code', 'field'])).toEqual({
            name: 'ModelOutputError',
            code: 'malformed_chunk',
            field,
          });
          expect(server.requests.length).toBe(1);
        }),
      TEST_TIMEOUT_MS,
    );
  });
}
