/**
 * `gemini()` against the local Gemini-shaped server (test/support/gemini-server.ts) with the real @google/genai SDK:
 * what each fixture becomes (events, response, usage, finish reason, providerParts) and what goes on the wire.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigurationError, ModelCallError, ModelOutputError } from '../src/errors.js';
import { gemini, GeminiResponseReader, mapGeminiFinishReason, mapGeminiUsage } from '../src/model/gemini/index.js';
import type { ModelEvent, ModelRequest, ModelResponse } from '../src/model/types.js';
import { collect } from './support/openai-server.js';
import { geminiChunk, geminiFrame, startGeminiServer, type GeminiServer } from './support/gemini-server.js';

let server: GeminiServer;
beforeAll(async () => void (server = await startGeminiServer()));
afterAll(() => server.close());

const model = (extra: Partial<Parameters<typeof gemini>[0]> = {}) =>
  gemini({ model: 'gemini-2.5-flash', apiKey: 'test-key', baseURL: server.url, ...extra });

const weather = { name: 'get_weather', description: 'The weather in a city', parameters: { type: 'object' } };
const request = (extra: Partial<ModelRequest> = {}): ModelRequest => ({
  instructions: 'Be brief.',
  items: [{ type: 'user', id: 'u1', text: 'hi' }],
  tools: [],
  stream: true,
  ...extra,
});

async function answer(script: Parameters<GeminiServer['enqueue']>[0], req = request()) {
  server.enqueue(script);
  const n = server.requests.length;
  const got = await collect<ModelEvent>(model().call(req));
  const last = got.events.at(-1);
  return {
    ...got,
    deltas: got.events.filter((e) => e.type !== 'response'),
    response: last?.type === 'response' ? last.response : undefined,
    wire: server.requests[n]!,
  };
}

describe('streamed answers become loopctl events', () => {
  it('text: one text_delta per chunk, STOP → stop, usage with the cached prompt tokens', async () => {
    const got = await answer({ fixture: 'text.sse' });
    expect(got.deltas).toEqual([
      { type: 'text_delta', delta: 'Hello' },
      { type: 'text_delta', delta: ' from' },
      { type: 'text_delta', delta: ' Gemini.' },
    ]);
    expect(got.response).toEqual({
      text: 'Hello from Gemini.',
      toolCalls: [],
      finishReason: 'stop',
      usage: { inputTokens: 12, outputTokens: 4, totalTokens: 16, cacheReadTokens: 8 },
      providerParts: { family: 'gemini', data: { parts: [{ text: 'Hello from Gemini.' }] } },
    });
    expect(got.wire.path).toBe('/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse');
    expect(got.wire.headers['x-goog-api-key']).toBe('test-key');
    expect(got.wire.rejected).toBeUndefined();
  });

  it('parallel calls without ids: one tool_call_delta each, generated ids that differ, STOP → tool_calls', async () => {
    const got = await answer({ fixture: 'parallel-calls.sse' }, request({ tools: [weather] }));
    const calls = got.response!.toolCalls;
    expect(calls.map((c) => [c.name, JSON.parse(c.arguments)])).toEqual([
      ['get_weather', { city: 'Paris' }],
      ['get_weather', { city: 'Tokyo' }],
    ]);
    expect(calls.map((c) => c.callId)).toEqual(['gemini-resp-par-1-0', 'gemini-resp-par-1-1']);
    expect(got.deltas).toEqual(
      calls.map((c, index) => ({
        type: 'tool_call_delta',
        index,
        callId: c.callId,
        name: c.name,
        argumentsDelta: c.arguments,
      })),
    );
    expect(got.response!.finishReason).toBe('tool_calls');
    // thinking tokens count as output
    expect(got.response!.usage).toEqual({ inputTokens: 40, outputTokens: 48, totalTokens: 88 });
    // the first call's signature stays on it
    expect(got.response!.providerParts).toEqual({
      family: 'gemini',
      data: {
        parts: [
          { functionCall: { name: 'get_weather', args: { city: 'Paris' } }, thoughtSignature: 'c2lnLXBhcmFsbGVsLTAx' },
          { functionCall: { name: 'get_weather', args: { city: 'Tokyo' } } },
        ],
      },
    });
  });

  it('calls with Gemini ids keep them as call ids', async () => {
    const got = await answer({ fixture: 'parallel-calls-ids.sse' }, request({ tools: [weather] }));
    expect(got.response!.toolCalls).toEqual([
      { callId: 'fc-a1', name: 'get_weather', arguments: '{"city":"Paris"}' },
      { callId: 'fc-b2', name: 'get_time', arguments: '{"zone":"Asia/Tokyo"}' },
    ]);
  });

  it('thought parts: reasoning_delta per chunk, joined into one thought part; the call keeps its signature', async () => {
    const got = await answer({ fixture: 'thought-call-1.sse' }, request({ tools: [weather] }));
    expect(got.deltas.slice(0, 2)).toEqual([
      { type: 'reasoning_delta', delta: '**Planning the lookup**\nThe user wants the weather in Paris; ' },
      { type: 'reasoning_delta', delta: 'I should call get_weather.' },
    ]);
    expect(got.response!.reasoning).toBe(
      '**Planning the lookup**\nThe user wants the weather in Paris; I should call get_weather.',
    );
    expect(got.response!.text).toBe('');
    expect(got.response!.providerParts!.data).toEqual({
      parts: [
        {
          text: '**Planning the lookup**\nThe user wants the weather in Paris; I should call get_weather.',
          thought: true,
        },
        {
          functionCall: { name: 'get_weather', args: { city: 'Paris' } },
          thoughtSignature: 'dGhvdWdodC1zaWctdHVybi0xLWNhbGw=',
        },
      ],
    });
  });

  it('a signature on a closing empty text part stays on that part, after the joined text', async () => {
    const got = await answer({ fixture: 'thought-answer-3.sse' });
    expect(got.response!.text).toBe('It is 18 °C (64.4 °F) in Paris.');
    expect(got.response!.providerParts!.data).toEqual({
      parts: [
        { text: '**Answering**\nI have both numbers now.', thought: true },
        { text: 'It is 18 °C (64.4 °F) in Paris.', thoughtSignature: 'dGhvdWdodC1zaWctdHVybi0zLXRleHQ=' },
      ],
    });
  });

  it('a blocked prompt (promptFeedback.blockReason) → content_filter with a refusal saying why', async () => {
    const got = await answer({ fixture: 'prompt-blocked.sse' });
    expect(got.response).toEqual({
      text: '',
      toolCalls: [],
      finishReason: 'content_filter',
      refusal: 'the prompt was blocked (SAFETY)',
      usage: { inputTokens: 9, outputTokens: 0, totalTokens: 9 },
    });
  });

  it('finishReason SAFETY → content_filter, keeping the text streamed before it', async () => {
    const got = await answer({ fixture: 'candidate-safety.sse' });
    expect(got.response).toMatchObject({ text: 'Here is how', finishReason: 'content_filter' });
  });

  it('MAX_TOKENS → length; MALFORMED_FUNCTION_CALL → other, with no call', async () => {
    expect((await answer({ fixture: 'max-tokens.sse' })).response).toMatchObject({
      text: 'The history of Rome begins with',
      finishReason: 'length',
    });
    expect((await answer({ fixture: 'malformed-function-call.sse' })).response).toMatchObject({
      text: '',
      toolCalls: [],
      finishReason: 'other',
    });
  });
});

describe('non-streamed answers (generateContent)', () => {
  it('one response, no deltas, the same reading as a stream', async () => {
    const got = await answer({ fixture: 'generate-content.json' }, request({ stream: false }));
    expect(got.wire.path).toBe('/v1beta/models/gemini-2.5-flash:generateContent');
    expect(got.deltas).toEqual([]);
    expect(got.response).toEqual({
      text: 'Four.',
      toolCalls: [],
      finishReason: 'stop',
      reasoning: '**Thinking briefly**',
      usage: { inputTokens: 7, outputTokens: 23, totalTokens: 30 },
      providerParts: {
        family: 'gemini',
        data: {
          parts: [
            { text: '**Thinking briefly**', thought: true },
            { text: 'Four.', thoughtSignature: 'c2lnLW5vbi1zdHJlYW1lZA==' },
          ],
        },
      },
    });
  });
});

describe('the request on the wire', () => {
  it('systemInstruction, contents, functionDeclarations with the JSON Schema, the caller config', async () => {
    server.enqueue({ fixture: 'text.sse' });
    const n = server.requests.length;
    const provider = model({ config: { temperature: 0, thinkingConfig: { includeThoughts: true } } });
    await collect(provider.call(request({ tools: [weather] })));
    expect(server.requests[n]!.body).toEqual({
      contents: [{ role: 'user', parts: [{ text: 'hi' }] }],
      systemInstruction: { parts: [{ text: 'Be brief.' }] },
      tools: [
        { functionDeclarations: [{ ...weather, parameters: undefined, parametersJsonSchema: weather.parameters }] },
      ],
      generationConfig: { temperature: 0, thinkingConfig: { includeThoughts: true } },
    });
  });

  it("the caller's built-in tools go first; its systemInstruction never replaces the agent's", async () => {
    server.enqueue({ fixture: 'text.sse' });
    const n = server.requests.length;
    const provider = model({ config: { tools: [{ googleSearch: {} }], systemInstruction: 'ignored' } });
    await collect(provider.call(request({ tools: [weather] })));
    const body = server.requests[n]!.body;
    expect(body.tools.map((t: object) => Object.keys(t)[0])).toEqual(['googleSearch', 'functionDeclarations']);
    expect(body.systemInstruction).toEqual({ parts: [{ text: 'Be brief.' }] });
  });

  it('structured output: responseMimeType + responseJsonSchema natively, or the schema in the instruction', async () => {
    const output = { name: 'answer', schema: { type: 'object', properties: { n: { type: 'number' } } }, strict: false };
    server.enqueue({ fixture: 'text.sse' }, { fixture: 'text.sse' });
    const n = server.requests.length;
    await collect(model().call(request({ output })));
    await collect(model({ structuredOutputs: 'instructions' }).call(request({ output })));
    expect(server.requests[n]!.body.generationConfig).toEqual({
      responseMimeType: 'application/json',
      responseJsonSchema: output.schema,
    });
    const byInstructions = server.requests[n + 1]!.body;
    expect(byInstructions.generationConfig).toEqual({});
    expect(byInstructions.systemInstruction.parts[0].text).toContain(JSON.stringify(output.schema));
    expect(byInstructions.systemInstruction.parts[0].text.startsWith('Be brief.')).toBe(true);
  });

  it("the engine's timeoutMs reaches the SDK with its margin; a stream without one has no SDK timer", async () => {
    server.enqueue({ fixture: 'generate-content.json' }, { fixture: 'text.sse' });
    const n = server.requests.length;
    await collect(model().call(request({ stream: false, timeoutMs: 4_000 })));
    await collect(model().call(request()));
    // the SDK sends its timer as X-Server-Timeout, in whole seconds: 4 000 + 1 000 ms
    expect(server.requests[n]!.headers['x-server-timeout']).toBe('5');
    expect(server.requests[n + 1]!.headers['x-server-timeout']).toBeUndefined();
  });

  it('no instructions: no systemInstruction', async () => {
    server.enqueue({ fixture: 'text.sse' });
    const n = server.requests.length;
    await collect(model().call(request({ instructions: '' })));
    expect(server.requests[n]!.body.systemInstruction).toBeUndefined();
  });
});

describe('wire faults', () => {
  it('a chunk of the wrong shape is a ModelOutputError naming the field', async () => {
    const bad = { sse: [geminiFrame({ candidates: [{ content: { parts: 'text' } }] })] };
    const got = await answer(bad);
    expect(got.error).toBeInstanceOf(ModelOutputError);
    expect(got.error).toMatchObject({ code: 'malformed_chunk', field: 'candidates[0].content.parts' });
    const call = await answer({ sse: [geminiFrame(geminiChunk([{ functionCall: { name: 'f', args: [1] } }]))] });
    expect(call.error).toMatchObject({
      code: 'malformed_chunk',
      field: 'candidates[0].content.parts[0].functionCall.args',
    });
    const usage = await answer({ sse: [geminiFrame({ usageMetadata: { promptTokenCount: '3' } })] });
    expect(usage.error).toMatchObject({ code: 'malformed_chunk', field: 'usageMetadata.promptTokenCount' });
  });

  it('a non-streamed body of the wrong shape is a ModelOutputError (malformed_response) naming the field', async () => {
    const got = await answer({ json: { candidates: [{ finishReason: 7 }] } }, request({ stream: false }));
    expect(got.error).toBeInstanceOf(ModelOutputError);
    expect(got.error).toMatchObject({ code: 'malformed_response', field: 'candidates[0].finishReason' });
  });

  it('a stream that ends before a finishReason is a retryable stream_truncated error', async () => {
    const got = await answer({ sse: [geminiFrame(geminiChunk([{ text: 'Hel' }]))] });
    expect(got.events).toEqual([{ type: 'text_delta', delta: 'Hel' }]);
    expect(got.error).toBeInstanceOf(ModelCallError);
    expect(got.error).toMatchObject({ code: 'stream_truncated', retryable: true, streamStarted: true });
  });

  it('a stream cut mid-way (socket destroyed) is retryable with streamStarted, so the engine rescues it', async () => {
    const got = await answer({ fixture: 'text.sse', cutAfter: 1 });
    expect(got.events).toEqual([{ type: 'text_delta', delta: 'Hello' }]);
    expect(got.error).toMatchObject({ name: 'ModelCallError', retryable: true, streamStarted: true });
  });

  it('a stream cut inside an event is retryable (stream_truncated)', async () => {
    const frame = geminiFrame(geminiChunk([{ text: 'Hello' }]));
    const got = await answer({ sse: [frame.slice(0, 30)] });
    expect(got.error).toMatchObject({ code: 'stream_truncated', retryable: true });
  });

  it('a whole JSON body where a stream was asked for is not read as an answer (the SDK: stream_truncated)', async () => {
    const got = await answer({ fixture: 'generate-content.json' }); // served as application/json to a stream request
    expect(got.events).toEqual([]);
    expect(got.error).toMatchObject({ name: 'ModelCallError', code: 'stream_truncated' });
  });

  it('a data line that is not JSON is a non-retryable invalid_json error', async () => {
    const got = await answer({ sse: ['data: {"candidates": [\r\n\r\n'] });
    expect(got.error).toMatchObject({ name: 'ModelCallError', code: 'invalid_json', retryable: false });
  });

  it('a connection lost after the finishReason arrived loses nothing: the response is returned', async () => {
    const frames = [geminiFrame(geminiChunk([{ text: 'Done.' }], { finishReason: 'STOP' })), 'data: {"cand'];
    const got = await answer({ sse: frames, cutAfter: 2 });
    expect(got.completed).toBe(true);
    expect(got.response).toMatchObject({ text: 'Done.', finishReason: 'stop' });
  });
});

describe('pure mappings', () => {
  it('finish reasons', () => {
    const table = [
      ['STOP', false, 'stop'],
      ['STOP', true, 'tool_calls'],
      ['MAX_TOKENS', false, 'length'],
      ...['SAFETY', 'RECITATION', 'BLOCKLIST', 'PROHIBITED_CONTENT', 'SPII', 'IMAGE_SAFETY'].map(
        (r) => [r, false, 'content_filter'] as const,
      ),
      ['MALFORMED_FUNCTION_CALL', false, 'other'],
      ['LANGUAGE', false, 'other'],
      ['OTHER', false, 'other'],
      ['SOMETHING_NEW', true, 'other'],
    ] as const satisfies readonly (readonly [string, boolean, string])[];
    for (const [reason, calls, mapped] of table)
      expect([reason, mapGeminiFinishReason(reason, calls)]).toEqual([reason, mapped]);
  });

  it('usage: thoughts are output, tool-use prompt tokens input, cached tokens read from the cache', () => {
    expect(
      mapGeminiUsage(
        {
          promptTokenCount: 100,
          toolUsePromptTokenCount: 5,
          candidatesTokenCount: 20,
          thoughtsTokenCount: 30,
          cachedContentTokenCount: 64,
          totalTokenCount: 155,
        },
        'malformed_chunk',
      ),
    ).toEqual({ inputTokens: 105, outputTokens: 50, totalTokens: 155, cacheReadTokens: 64 });
    expect(mapGeminiUsage({ promptTokenCount: 3 }, 'malformed_chunk')).toEqual({
      inputTokens: 3,
      outputTokens: 0,
      totalTokens: 3,
    });
    expect(mapGeminiUsage(undefined, 'malformed_chunk')).toBeUndefined();
  });

  it('calls without ids in answers without a responseId still get distinct ids', () => {
    const idsOf = () => {
      const reader = new GeminiResponseReader('malformed_response');
      reader.push({
        candidates: [{ content: { parts: [{ functionCall: { name: 'f', args: {} } }] }, finishReason: 'STOP' }],
      });
      return reader.finish().toolCalls.map((c) => c.callId);
    };
    const [a, b] = [idsOf(), idsOf()];
    expect(a[0]).toMatch(/^gemini-[0-9a-z]+-0$/);
    expect(a[0]).not.toBe(b[0]);
  });

  it('the reader joins streamed text but never across a signature', () => {
    const reader = new GeminiResponseReader('malformed_chunk');
    reader.push(geminiChunk([{ text: 'a' }]));
    reader.push(geminiChunk([{ text: 'b', thoughtSignature: 'S1' }]));
    reader.push(geminiChunk([{ text: 'c' }]));
    reader.push(geminiChunk([{ text: 'd', thought: true }], { finishReason: 'STOP' }));
    const response: ModelResponse = reader.finish();
    expect(response.providerParts!.data).toEqual({
      parts: [{ text: 'ab', thoughtSignature: 'S1' }, { text: 'c' }, { text: 'd', thought: true }],
    });
  });
});

describe('construction', () => {
  it('names the bad option', () => {
    const bad = [
      [{ model: '' }, 'model'],
      [{ model: 'm', timeoutMs: 0 }, 'timeoutMs'],
      [{ model: 'm', structuredOutputs: 'auto' }, 'structuredOutputs'],
      [{ model: 'm', unsignedCallSignature: '' }, 'unsignedCallSignature'],
    ] as const;
    for (const [options, field] of bad) {
      let error: unknown;
      try {
        gemini({ apiKey: 'k', ...(options as { model: string }) });
      } catch (err) {
        error = err;
      }
      expect(error).toBeInstanceOf(ConfigurationError);
      expect((error as ConfigurationError).field).toBe(field);
    }
  });

  it('without a key or client: apiKey, naming both environment variables', () => {
    const saved = { g: process.env.GOOGLE_API_KEY, m: process.env.GEMINI_API_KEY };
    delete process.env.GOOGLE_API_KEY;
    delete process.env.GEMINI_API_KEY;
    try {
      expect(() => gemini({ model: 'm' })).toThrow(/apiKey: .*GOOGLE_API_KEY or GEMINI_API_KEY/);
      process.env.GEMINI_API_KEY = 'from-env';
      expect(gemini({ model: 'm' }).id).toBe('gemini:m');
    } finally {
      for (const [k, v] of [
        ['GOOGLE_API_KEY', saved.g],
        ['GEMINI_API_KEY', saved.m],
      ] as const) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
    }
  });
});
