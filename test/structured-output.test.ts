/**
 * Structured output (docs/run-control.md, "Structured output") over the replay server: the hand-written
 * structured-output streams of test/fixtures/openai/ (see its README), through the official SDK.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  ConfigurationError,
  RunEventSchema,
  RunFailedError,
  defineAgent,
  openaiChat,
  openaiResponses,
  run,
  start,
  type ModelProvider,
  type RunEvent,
} from '../src/index.js';
import { collectEvents, scriptedModel } from '../src/testing/index.js';
import { startOpenAIServer, type OpenAIServer } from './support/openai-server.js';

const CityFacts = z.object({ city: z.string(), population: z.number() });
/** What the agent's schema is on the wire: zod's input schema, objects closed. */
const WIRE_SCHEMA = {
  type: 'object',
  properties: { city: { type: 'string' }, population: { type: 'number' } },
  required: ['city', 'population'],
  additionalProperties: false,
};
const VALID_TEXT = '{"city": "Paris", "population": 2102650}';
const INVALID_TEXT = '{"city": "Paris", "population": "two million"}';
const PARIS = { city: 'Paris', population: 2102650 };

let server: OpenAIServer;
beforeAll(async () => void (server = await startOpenAIServer()));
afterAll(() => server.close());
beforeEach(() => void server.requests.splice(0));

type Mode = 'native' | 'instructions' | 'auto';
const mode = (structuredOutputs?: Mode) => (structuredOutputs ? { structuredOutputs } : {});
const chat = (structuredOutputs?: Mode) =>
  openaiChat({ model: 'gpt-4o', apiKey: 'test-key', baseURL: server.baseURL, ...mode(structuredOutputs) });
const responses = (structuredOutputs?: Mode) =>
  openaiResponses({ model: 'gpt-4.1', apiKey: 'test-key', baseURL: server.baseURL, ...mode(structuredOutputs) });
const FORMAT = { type: 'json_schema', name: 'city_facts', schema: WIRE_SCHEMA, strict: true };
const agentOn = (model: ModelProvider, extra: { outputRetries?: number; maxTurns?: number } = {}) =>
  defineAgent({ name: 'city_facts', instructions: 'You know cities.', model, output: CityFacts, ...extra });
const ofType = <T extends RunEvent['type']>(events: RunEvent[], type: T) =>
  events.filter((e): e is Extract<RunEvent, { type: T }> => e.type === type);
const terminal = (events: RunEvent[]) => events.at(-1)!;
const RETRY_OFF = { retry: false } as const;

describe('native structured outputs', () => {
  it('Chat: response_format json_schema is sent; run_completed has the raw text and the typed value', async () => {
    server.enqueue({ fixture: 'chat-structured-output.sse' });
    const handle = start(agentOn(chat('native')), 'Facts about Paris?', RETRY_OFF);
    const events = await collectEvents(handle.events$);
    const result = await handle.result;
    expect(server.requests).toHaveLength(1);
    const body = server.requests[0]!.body;
    expect(body.response_format).toEqual({
      type: 'json_schema',
      json_schema: { name: 'city_facts', schema: WIRE_SCHEMA, strict: true },
    });
    expect(body.messages[0]).toEqual({ role: 'system', content: 'You know cities.' });
    const done = terminal(events);
    expect(done).toMatchObject({ type: 'run_completed', stopReason: 'completed', output: VALID_TEXT, value: PARIS });
    expect(result.output).toBe(VALID_TEXT);
    expect(result.value).toEqual(PARIS);
    const population: number = result.value!.population; // typed by the schema
    expect(population).toBe(2102650);
    for (const event of events) expect(RunEventSchema.parse(event)).toEqual(event);
  });

  it('Responses: text.format json_schema is sent', async () => {
    server.enqueue({ fixture: 'responses-structured-output.sse' });
    const events = await collectEvents(run(agentOn(responses('native')), 'Facts about Paris?', RETRY_OFF));
    const body = server.requests[0]!.body;
    expect(body.text).toEqual({ format: FORMAT });
    expect(body.instructions).toBe('You know cities.');
    expect(terminal(events)).toMatchObject({ type: 'run_completed', output: VALID_TEXT, value: PARIS });
  });

  it("Responses: text.format sits beside the caller's own text options", async () => {
    server.enqueue({ fixture: 'responses-structured-output.sse' });
    const model = openaiResponses({
      model: 'gpt-4.1',
      apiKey: 'k',
      baseURL: server.baseURL,
      structuredOutputs: 'native',
      request: { text: { verbosity: 'low' } },
    });
    await collectEvents(run(agentOn(model), 'q', RETRY_OFF));
    expect(server.requests[0]!.body.text).toEqual({ verbosity: 'low', format: FORMAT });
  });

  it('a schema with an optional field is sent with strict: false', async () => {
    server.enqueue({ fixture: 'chat-structured-output.sse' });
    const output = z.object({ city: z.string(), population: z.number(), country: z.string().optional() });
    const agent = defineAgent({ name: 'city facts!', instructions: '', model: chat('native'), output });
    const events = await collectEvents(run(agent, 'q', RETRY_OFF));
    const format = server.requests[0]!.body.response_format;
    expect(format.json_schema.name).toBe('city_facts_');
    expect(format.json_schema.strict).toBe(false);
    expect(terminal(events)).toMatchObject({ type: 'run_completed', value: PARIS });
  });

  it('native: a 400 naming response_format fails the run (no fallback in that mode)', async () => {
    server.enqueue({ errorFixture: 'error-400-response-format.json', status: 400 });
    const events = await collectEvents(run(agentOn(chat('native')), 'q', RETRY_OFF));
    expect(server.requests).toHaveLength(1);
    expect(terminal(events)).toMatchObject({ type: 'run_failed', stopReason: 'model_error', error: { status: 400 } });
  });
});

describe('output_delta', () => {
  it('follows every text_delta of a streamed answer with the partial value so far (Chat)', async () => {
    server.enqueue({ fixture: 'chat-structured-output.sse' });
    const events = await collectEvents(run(agentOn(chat('native')), 'q', RETRY_OFF));
    const streamed = events.filter((e) => e.type === 'text_delta' || e.type === 'output_delta');
    expect(streamed.map((e) => (e.type === 'text_delta' ? ['text', e.delta] : ['value', e.value]))).toEqual([
      ['text', '{"'],
      ['value', {}],
      ['text', 'city": "Par'],
      ['value', { city: 'Par' }],
      ['text', 'is", "popu'],
      ['value', { city: 'Paris' }],
      ['text', 'lation": 2102'],
      ['value', { city: 'Paris', population: 2102 }],
      ['text', '650}'],
      ['value', PARIS],
    ]);
    // Each output_delta comes right after its text_delta.
    for (const d of ofType(events, 'output_delta')) expect(events[events.indexOf(d) - 1]!.type).toBe('text_delta');
  });

  it('the same values for the Responses stream', async () => {
    server.enqueue({ fixture: 'responses-structured-output.sse' });
    const events = await collectEvents(run(agentOn(responses('native')), 'q', RETRY_OFF));
    expect(ofType(events, 'output_delta').map((e) => e.value)).toEqual([
      {},
      { city: 'Par' },
      { city: 'Paris' },
      { city: 'Paris', population: 2102 },
      PARIS,
    ]);
  });

  it('a non-streamed answer gives one output_delta; an agent without output gives none', async () => {
    const typed = agentOn(scriptedModel([VALID_TEXT], { stream: false }));
    const events = await collectEvents(run(typed, 'q'));
    expect(ofType(events, 'output_delta').map((e) => e.value)).toEqual([PARIS]);
    const plain = defineAgent({ name: 'p', instructions: '', model: scriptedModel([{ text: ['{"a', '": 1}'] }]) });
    const plainEvents = await collectEvents(run(plain, 'q'));
    expect(ofType(plainEvents, 'output_delta')).toEqual([]);
    expect(terminal(plainEvents)).not.toHaveProperty('value');
  });

  it('prose, or a code fence still open, parses as far as it can', async () => {
    const model = scriptedModel([{ text: ['Sure', '```json\n{"city"', ': "Rome"}\n```'] }, { text: ['Hello'] }]);
    const City = z.object({ city: z.string() });
    const agent = defineAgent({ name: 'a', instructions: '', model, output: City, outputRetries: 0 });
    const events = await collectEvents(run(agent, 'q'));
    expect(ofType(events, 'output_delta').map((e) => e.value)).toEqual([undefined, undefined, undefined]);
    expect(terminal(events)).toMatchObject({ type: 'run_failed', stopReason: 'output_invalid' });
    const fenced = scriptedModel([{ text: ['```json\n{"city"', ': "Rome"}\n```'] }]);
    const agent2 = defineAgent({ name: 'a', instructions: '', model: fenced, output: City });
    const events2 = await collectEvents(run(agent2, 'q'));
    expect(ofType(events2, 'output_delta').map((e) => e.value)).toEqual([{}, { city: 'Rome' }]);
    expect(terminal(events2)).toMatchObject({
      type: 'run_completed',
      output: '```json\n{"city": "Rome"}\n```',
      value: { city: 'Rome' },
    });
  });
});

describe('repair turns and output_invalid', () => {
  it('an invalid answer gets a repair turn carrying the validation error; the second answer completes', async () => {
    server.enqueue({ fixture: 'chat-structured-output-invalid.sse' }, { fixture: 'chat-structured-output.sse' });
    const handle = start(agentOn(chat('native')), 'Facts about Paris?', RETRY_OFF);
    const events = await collectEvents(handle.events$);
    const result = await handle.result;
    expect(server.requests).toHaveLength(2);
    const second = server.requests[1]!.body.messages as { role: string; content: string }[];
    expect(second.slice(1, 3)).toEqual([
      { role: 'user', content: 'Facts about Paris?' },
      { role: 'assistant', content: INVALID_TEXT },
    ]);
    const repair = second[3]!;
    expect(repair.role).toBe('user');
    expect(repair.content).toContain('Your answer was refused: the answer does not match the schema:');
    expect(repair.content).toContain('expected number, received string');
    expect(repair.content).toContain('→ at population');
    expect(second).toHaveLength(4);
    expect(second[0]!.role).toBe('system');
    expect(ofType(events, 'turn_started')).toHaveLength(2);
    expect(terminal(events)).toMatchObject({ type: 'run_completed', turn: 2, output: VALID_TEXT, value: PARIS });
    // The repair message is one of the run's Items (what a session would store).
    expect(result.items.map((i) => i.type)).toEqual(['user', 'assistant', 'user', 'assistant']);
    expect(result.items[2]).toMatchObject({ type: 'user', text: repair.content });
  });

  it('Responses: the repair turn sends the refused answer and the validation error as input', async () => {
    server.enqueue({ fixture: 'responses-structured-output-invalid.sse' });
    server.enqueue({ fixture: 'responses-structured-output.sse' });
    const events = await collectEvents(run(agentOn(responses('native')), 'Facts about Paris?', RETRY_OFF));
    expect(server.requests).toHaveLength(2);
    const input = server.requests[1]!.body.input as { role?: string; content?: unknown }[];
    expect(input).toHaveLength(3);
    expect(JSON.stringify(input[1])).toContain('two million');
    expect(input[2]!.role).toBe('user');
    expect(JSON.stringify(input[2]!.content)).toContain('expected number, received string');
    expect(server.requests[1]!.body.text).toMatchObject({ format: { type: 'json_schema' } });
    expect(terminal(events)).toMatchObject({ type: 'run_completed', turn: 2, value: PARIS });
  });

  it('after outputRetries repairs the run fails output_invalid with the raw text', async () => {
    server.enqueue({ fixture: 'chat-structured-output-invalid.sse' });
    server.enqueue({ fixture: 'chat-structured-output-invalid.sse' });
    const handle = start(agentOn(chat('native')), 'q', RETRY_OFF);
    const events = await collectEvents(handle.events$);
    expect(server.requests).toHaveLength(2);
    const failed = terminal(events);
    expect(failed).toMatchObject({
      type: 'run_failed',
      stopReason: 'output_invalid',
      output: INVALID_TEXT,
      turn: 2,
      error: { name: 'OutputValidationError' },
    });
    expect(failed.type === 'run_failed' && failed.error.message).toContain('expected number, received string');
    expect(RunEventSchema.parse(failed)).toEqual(failed);
    const error = await handle.result.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RunFailedError);
    expect(error).toMatchObject({ stopReason: 'output_invalid', output: INVALID_TEXT });
    // The run committed nothing; partial has both answers and the repair message.
    const partialTypes = failed.type === 'run_failed' && failed.partial.map((i) => i.type);
    expect(partialTypes).toEqual(['user', 'assistant', 'user', 'assistant']);
  });

  it('outputRetries: 0 fails at the first invalid answer; 2 allows two repairs', async () => {
    const zero = agentOn(scriptedModel([INVALID_TEXT, VALID_TEXT]), { outputRetries: 0 });
    const zeroEvents = await collectEvents(run(zero, 'q'));
    expect(terminal(zeroEvents)).toMatchObject({
      type: 'run_failed',
      stopReason: 'output_invalid',
      output: INVALID_TEXT,
      turn: 1,
    });
    const twice = scriptedModel(['not json', INVALID_TEXT, VALID_TEXT]);
    const twoEvents = await collectEvents(run(agentOn(twice, { outputRetries: 2 }), 'q'));
    expect(terminal(twoEvents)).toMatchObject({ type: 'run_completed', turn: 3, value: PARIS });
    expect(twice.requests[1]!.items.at(-1)).toMatchObject({ type: 'user' });
    const notJson = twice.requests[1]!.items.at(-1) as { text: string };
    expect(notJson.text).toMatch(/^Your answer was refused: the answer is not valid JSON: /);
  });

  it('repair turns count toward maxTurns: with no turn left the invalid answer fails the run', async () => {
    const steps = [{ toolCalls: [{ name: 'lookup', arguments: {} }] }, INVALID_TEXT, VALID_TEXT];
    const lookup = { name: 'lookup', description: 'd', parameters: z.object({}), execute: () => 'Paris: 2102650' };
    const short = scriptedModel(steps);
    const withTurns = (model: ModelProvider, maxTurns: number) =>
      defineAgent({ name: 'a', instructions: '', model, tools: [lookup], output: CityFacts, maxTurns });
    const agent2 = withTurns(short, 2);
    const events = await collectEvents(run(agent2, 'q'));
    expect(short.requests).toHaveLength(2);
    const failed = terminal(events);
    expect(failed).toMatchObject({ type: 'run_failed', stopReason: 'output_invalid', output: INVALID_TEXT, turn: 2 });
    expect(failed.type === 'run_failed' && failed.error.message).toMatch(/no turn left for a repair \(maxTurns 2\)$/);
    const roomy = scriptedModel(steps);
    const agent3 = withTurns(roomy, 3);
    const events3 = await collectEvents(run(agent3, 'q'));
    expect(roomy.requests).toHaveLength(3);
    expect(terminal(events3)).toMatchObject({ type: 'run_completed', turn: 3, value: PARIS });
  });
});

describe("structuredOutputs: 'auto' and 'instructions'", () => {
  it('Chat: a 400 naming response_format is sent again at once by instructions; the provider remembers', async () => {
    server.enqueue({ errorFixture: 'error-400-response-format.json', status: 400 });
    server.enqueue({ fixture: 'chat-structured-output.sse' });
    const model = chat(); // 'auto' is the default
    const fallback = scriptedModel([]);
    const agent = defineAgent({
      name: 'city_facts',
      instructions: 'You know cities.',
      model,
      output: CityFacts,
      fallbackModel: fallback,
      breaker: { failureThreshold: 1 },
    });
    const events = await collectEvents(run(agent, 'q'));
    expect(server.requests).toHaveLength(2);
    expect(server.requests[0]!.body.response_format).toMatchObject({ type: 'json_schema' });
    const second = server.requests[1]!.body;
    expect(second).not.toHaveProperty('response_format');
    expect(second.messages[0]).toEqual({ role: 'system', content: instructionsWithSchema('You know cities.') });
    expect(terminal(events)).toMatchObject({ type: 'run_completed', value: PARIS });
    // No retry_scheduled, one model request as the run sees it, and the breaker heard no failure.
    expect(events.map((e) => e.type)).not.toContain('retry_scheduled');
    expect(events.map((e) => e.type)).not.toContain('fallback_activated');
    expect(ofType(events, 'model_request_started')).toEqual([expect.objectContaining({ attempt: 1 })]);
    expect(fallback.requests).toHaveLength(0);

    server.enqueue({ fixture: 'chat-structured-output.sse' });
    const again = await collectEvents(run(agent, 'q'));
    expect(server.requests).toHaveLength(3);
    expect(server.requests[2]!.body).not.toHaveProperty('response_format');
    expect(server.requests[2]!.body.messages[0].content).toBe(instructionsWithSchema('You know cities.'));
    expect(terminal(again)).toMatchObject({ type: 'run_completed', value: PARIS });

    // Another instance of the provider starts natively again.
    server.enqueue({ fixture: 'chat-structured-output.sse' });
    await collectEvents(run(agentOn(chat()), 'q'));
    expect(server.requests[3]!.body.response_format).toMatchObject({ type: 'json_schema' });
  });

  it('Responses: a 400 naming text.format falls back the same way', async () => {
    server.enqueue({ errorFixture: 'error-400-text-format.json', status: 400 });
    server.enqueue({ fixture: 'responses-structured-output.sse' });
    const model = responses('auto');
    const events = await collectEvents(run(agentOn(model), 'q'));
    expect(server.requests).toHaveLength(2);
    expect(server.requests[0]!.body.text).toMatchObject({ format: { type: 'json_schema' } });
    expect(server.requests[1]!.body).not.toHaveProperty('text');
    expect(server.requests[1]!.body.instructions).toBe(instructionsWithSchema('You know cities.'));
    expect(events.map((e) => e.type)).not.toContain('retry_scheduled');
    expect(terminal(events)).toMatchObject({ type: 'run_completed', value: PARIS });
    server.enqueue({ fixture: 'responses-structured-output.sse' });
    await collectEvents(run(agentOn(model), 'q'));
    expect(server.requests[2]!.body).not.toHaveProperty('text');
  });

  it('auto: another 400 is not a reason to fall back', async () => {
    server.enqueue({ errorFixture: 'error-400-unsupported-parameter.json', status: 400 });
    const events = await collectEvents(run(agentOn(chat('auto')), 'q', RETRY_OFF));
    expect(server.requests).toHaveLength(1);
    expect(terminal(events)).toMatchObject({ type: 'run_failed', stopReason: 'model_error' });
  });

  it("'instructions' never sends response_format; an agent without output gets neither", async () => {
    server.enqueue({ fixture: 'chat-structured-output.sse' }, { fixture: 'chat-text-usage.sse' });
    const model = chat('instructions');
    const events = await collectEvents(run(agentOn(model), 'q'));
    expect(server.requests[0]!.body).not.toHaveProperty('response_format');
    expect(server.requests[0]!.body.messages[0].content).toBe(instructionsWithSchema('You know cities.'));
    expect(terminal(events)).toMatchObject({ type: 'run_completed', value: PARIS });
    await collectEvents(run(defineAgent({ name: 'p', instructions: 'Hi.', model }), 'q'));
    expect(server.requests[1]!.body).not.toHaveProperty('response_format');
    expect(server.requests[1]!.body.messages[0]).toEqual({ role: 'system', content: 'Hi.' });
  });
});

describe('the model abstraction and the options', () => {
  it('ModelRequest.output carries the spec to any provider (scriptedModel records it)', async () => {
    const model = scriptedModel([VALID_TEXT]);
    await collectEvents(run(agentOn(model), 'q'));
    expect(model.requests[0]!.output).toEqual({ name: 'city_facts', schema: WIRE_SCHEMA, strict: true });
    const plain = scriptedModel(['hi']);
    await collectEvents(run(defineAgent({ name: 'p', instructions: '', model: plain }), 'q'));
    expect(plain.requests[0]).not.toHaveProperty('output');
  });

  it('bad options are a ConfigurationError naming the field', () => {
    const model = scriptedModel([]);
    const bad = (definition: Record<string, unknown>) => () =>
      defineAgent({ name: 'a', instructions: '', model, ...definition } as never);
    const naming = (field: string) => expect.objectContaining({ field });
    expect(bad({ output: { type: 'object' } })).toThrow(expect.objectContaining({ field: 'agent.output' }));
    expect(bad({ output: z.object({ at: z.date() }) })).toThrow(expect.objectContaining({ field: 'agent.output' }));
    expect(bad({ output: CityFacts, outputRetries: -1 })).toThrow(naming('agent.outputRetries'));
    expect(bad({ output: CityFacts, outputRetries: 1.5 })).toThrow(naming('agent.outputRetries'));
    expect(bad({ outputRetries: 1 })).toThrow(expect.objectContaining({ field: 'agent.outputRetries' }));
    expect(bad({ output: 'json' })).toThrow(ConfigurationError);
    expect(defineAgent({ name: 'a', instructions: '', model, output: CityFacts }).outputRetries).toBe(1);
    const chatWith = (structuredOutputs: unknown) => () =>
      openaiChat({ model: 'm', apiKey: 'k', structuredOutputs: structuredOutputs as Mode });
    expect(chatWith('json')).toThrow(
      expect.objectContaining({ name: 'ConfigurationError', field: 'structuredOutputs' }),
    );
    expect(() => openaiResponses({ model: 'm', apiKey: 'k', structuredOutputs: 1 as never })).toThrow(
      expect.objectContaining({ field: 'structuredOutputs' }),
    );
  });
});

function instructionsWithSchema(instructions: string): string {
  return (
    `${instructions}\n\nYour final answer must be one JSON value, with no other text and no Markdown code fence, ` +
    `valid against this JSON Schema:\n${JSON.stringify(WIRE_SCHEMA)}`
  );
}
