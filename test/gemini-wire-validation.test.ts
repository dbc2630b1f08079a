/**
 * The local Gemini server refuses, with the real API's 400 INVALID_ARGUMENT, what the real API refuses (so the tool
 * loop specs that see it accept every request prove something), and `toGeminiContents` builds the history it accepts:
 * Gemini's parts replayed as stored, other families' turns rebuilt without their providerParts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Item } from '../src/items.js';
import { SKIP_THOUGHT_SIGNATURE, toGeminiContents } from '../src/model/gemini/index.js';
import { startGeminiServer, type GeminiServer } from './support/gemini-server.js';

let server: GeminiServer;
const SIG_1 = 'dGhvdWdodC1zaWctdHVybi0xLWNhbGw=';
beforeAll(async () => {
  server = await startGeminiServer();
  // serve the first turn of the tool loop once, so the server has issued SIG_1 on its get_weather call
  server.enqueue({ fixture: 'thought-call-1.sse' });
  await (await post({ contents: [user('Weather in Paris?')] })).text();
});
afterAll(() => server.close());

const user = (text: string) => ({ role: 'user', parts: [{ text }] });
const thought = {
  text: '**Planning the lookup**\nThe user wants the weather in Paris; I should call get_weather.',
  thought: true,
};
const call = { functionCall: { name: 'get_weather', args: { city: 'Paris' } }, thoughtSignature: SIG_1 };
const result = { role: 'user', parts: [{ functionResponse: { name: 'get_weather', response: { output: '18 °C' } } }] };

function post(body: unknown) {
  return fetch(`${server.url}/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
}

async function refusal(contents: unknown): Promise<{ status: number; error?: { status: string; message: string } }> {
  const response = await post({ contents });
  const text = await response.text();
  return response.status === 200 ? { status: 200 } : { status: response.status, ...(JSON.parse(text) as object) };
}

describe('the local server refuses what the real API refuses', () => {
  const valid = [user('Weather in Paris?'), { role: 'model', parts: [thought, call] }, result];

  it('accepts the valid history (and answers it from the queue)', async () => {
    server.enqueue({ fixture: 'thought-answer-3.sse' });
    expect(await refusal(valid)).toEqual({ status: 200 });
  });

  const cases: [string, unknown, RegExp][] = [
    ['no contents', [], /contents is not specified/],
    ['a role other than user or model', [{ role: 'assistant', parts: [{ text: 'x' }] }], /valid role: user, model/],
    ['a turn without parts', [{ role: 'user', parts: [] }], /parts must not be empty/],
    ['a call turn not followed by its responses', valid.slice(0, 2), /number of function response parts/],
    [
      'fewer responses than calls',
      [
        valid[0],
        { role: 'model', parts: [thought, call, { functionCall: { name: 'get_weather', args: {} } }] },
        result,
      ],
      /number of function response parts/,
    ],
    ['a response turn after no call', [user('hi'), result], /function response turn comes immediately after/],
    [
      'a changed signature',
      [valid[0], { role: 'model', parts: [thought, { ...call, thoughtSignature: `${SIG_1}x` }] }, result],
      /Corrupted thought signature/,
    ],
    [
      'a dropped signature',
      [valid[0], { role: 'model', parts: [thought, { functionCall: call.functionCall }] }, result],
      /missing a thought_signature/,
    ],
    [
      'a signature moved to another part',
      [
        valid[0],
        { role: 'model', parts: [{ ...thought, thoughtSignature: SIG_1 }, { functionCall: call.functionCall }] },
        result,
      ],
      /issued on another part/,
    ],
  ];
  for (const [what, contents, message] of cases) {
    it(`refuses ${what} with 400 INVALID_ARGUMENT`, async () => {
      const got = await refusal(contents);
      expect(got).toMatchObject({ status: 400, error: { status: 'INVALID_ARGUMENT' } });
      expect(got.error!.message).toMatch(message);
    });
  }

  it("accepts Google's documented skip signature on a call it never issued", async () => {
    server.enqueue({ fixture: 'text.sse' });
    const foreign = { functionCall: { name: 'lookup', args: {} }, thoughtSignature: SKIP_THOUGHT_SIGNATURE };
    const response = [{ functionResponse: { name: 'lookup', response: { output: 'ok' } } }];
    expect(await refusal([user('q'), { role: 'model', parts: [foreign] }, { role: 'user', parts: response }])).toEqual({
      status: 200,
    });
  });
});

describe('toGeminiContents', () => {
  const history = (assistant: Item): Item[] => [
    { type: 'user', id: 'u1', text: 'Weather in Paris?' },
    assistant,
    { type: 'tool_result', callId: 'call_1', output: '18 °C', isError: false },
    { type: 'tool_result', callId: 'call_2', output: 'no such city', isError: true },
  ];
  const calls = [
    { callId: 'call_1', name: 'get_weather', arguments: '{"city":"Paris"}' },
    { callId: 'call_2', name: 'get_weather', arguments: 'not json' },
  ];

  it("another family's assistant turn: rebuilt from text and calls, its providerParts dropped, the skip signature", () => {
    const openai: Item = {
      type: 'assistant',
      id: 'a1',
      text: 'Looking.',
      toolCalls: calls,
      providerParts: { family: 'openai', data: { encrypted: 'opaque' } },
    };
    expect(toGeminiContents(history(openai), { unsignedCallSignature: SKIP_THOUGHT_SIGNATURE })).toEqual([
      { role: 'user', parts: [{ text: 'Weather in Paris?' }] },
      {
        role: 'model',
        parts: [
          { text: 'Looking.' },
          { functionCall: { name: 'get_weather', args: { city: 'Paris' } }, thoughtSignature: SKIP_THOUGHT_SIGNATURE },
          { functionCall: { name: 'get_weather', args: {} } },
        ],
      },
      {
        role: 'user',
        parts: [
          { functionResponse: { name: 'get_weather', response: { output: '18 °C' } } },
          { functionResponse: { name: 'get_weather', response: { error: 'no such city' } } },
        ],
      },
    ]);
    const plain = toGeminiContents(history(openai), { unsignedCallSignature: false });
    expect(JSON.stringify(plain)).not.toContain('thoughtSignature');
    expect(JSON.stringify(plain)).not.toContain('opaque');
  });

  it('a Gemini turn whose parts no longer match its calls is rebuilt, not replayed', () => {
    const edited: Item = {
      type: 'assistant',
      id: 'a1',
      text: '',
      toolCalls: calls,
      providerParts: { family: 'gemini', data: { parts: [call] } }, // one call in the parts, two on the Item
    };
    const model = toGeminiContents(history(edited), { unsignedCallSignature: false })[1]!;
    expect(model.parts).toHaveLength(2);
    expect(JSON.stringify(model)).not.toContain(SIG_1);
  });

  it('a Gemini turn is replayed as stored, and a call id Gemini gave goes on its functionResponse', () => {
    const parts = [
      thought,
      { functionCall: { id: 'fc-1', name: 'get_weather', args: { city: 'Paris' } }, thoughtSignature: SIG_1 },
    ];
    const mine: Item = {
      type: 'assistant',
      id: 'a1',
      text: '',
      toolCalls: [{ callId: 'fc-1', name: 'get_weather', arguments: '{"city":"Paris"}' }],
      providerParts: { family: 'gemini', data: { parts } },
    };
    const items: Item[] = [mine, { type: 'tool_result', callId: 'fc-1', output: 'ok', isError: false }];
    expect(toGeminiContents(items, { unsignedCallSignature: SKIP_THOUGHT_SIGNATURE })).toEqual([
      { role: 'model', parts },
      { role: 'user', parts: [{ functionResponse: { id: 'fc-1', name: 'get_weather', response: { output: 'ok' } } }] },
    ]);
  });

  it('an empty assistant turn (no text, no calls) is left out', () => {
    const items: Item[] = [
      { type: 'user', id: 'u', text: 'a' },
      { type: 'assistant', id: 'x', text: '', toolCalls: [] },
      { type: 'user', id: 'v', text: 'b' },
    ];
    expect(toGeminiContents(items, { unsignedCallSignature: false }).map((c) => c.role)).toEqual(['user', 'user']);
  });
});
