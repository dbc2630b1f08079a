/**
 * Gemini beside OpenAI in one agent system: a Gemini sub-agent under an OpenAI parent, and a fallback between the two
 * families in the middle of a tool loop. Each family's wire gets only what it understands: Gemini's thought parts and
 * signatures never reach the OpenAI server, an OpenAI-made turn reaches Gemini rebuilt from its text and calls (with
 * Google's documented skip signature), and both local servers accept every request.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { MemorySession, defineAgent, openaiChat, run, tool } from '../src/index.js';
import { SKIP_THOUGHT_SIGNATURE, gemini } from '../src/model/gemini/index.js';
import { collectEvents } from '../src/testing/index.js';
import { geminiText, startGeminiServer, type GeminiServer } from './support/gemini-server.js';
import { startOpenAIServer, textStream, toolCallsStream, type OpenAIServer } from './support/openai-server.js';

let googleServer: GeminiServer;
let openaiServer: OpenAIServer;
beforeAll(async () => {
  googleServer = await startGeminiServer();
  openaiServer = await startOpenAIServer();
});
afterAll(async () => {
  await googleServer.close();
  await openaiServer.close();
});

const SIG_1 = 'dGhvdWdodC1zaWctdHVybi0xLWNhbGw=';
const THOUGHT = 'The user wants the weather in Paris';

const getWeather = tool({
  name: 'get_weather',
  description: 'The weather in a city, in °C',
  parameters: z.object({ city: z.string() }),
  execute: ({ city }) => `${city}: 18 °C`,
});
const convert = tool({
  name: 'convert',
  description: 'Celsius to Fahrenheit',
  parameters: z.object({ celsius: z.number() }),
  execute: ({ celsius }) => String((celsius * 9) / 5 + 32),
});
const geminiModel = () => gemini({ model: 'gemini-2.5-flash', apiKey: 'k', baseURL: googleServer.url });
const openaiModel = () => openaiChat({ model: 'gpt-test', apiKey: 'k', baseURL: openaiServer.baseURL });

describe('mixed providers', () => {
  it('a Gemini sub-agent under an OpenAI parent: each wire carries its own family only', async () => {
    const researcher = defineAgent({
      name: 'researcher',
      instructions: 'Look it up.',
      model: geminiModel(),
      tools: [getWeather],
    });
    const parent = defineAgent({
      name: 'lead',
      instructions: 'Delegate.',
      model: openaiModel(),
      tools: [researcher.asTool({ name: 'ask_gemini', description: 'Asks the Gemini researcher' })],
    });
    const g = googleServer.requests.length;
    const o = openaiServer.requests.length;
    openaiServer.enqueue(
      toolCallsStream([{ id: 'call_lead_1', name: 'ask_gemini', args: { input: 'Weather in Paris?' } }]),
      textStream('The researcher says: 18 °C in Paris.'),
    );
    googleServer.enqueue({ fixture: 'thought-call-1.sse' }, { fixture: 'thought-answer-3.sse' });

    const events = await collectEvents(run(parent, 'How warm is Paris?'));
    expect(events.at(-1)).toMatchObject({ type: 'run_completed', output: 'The researcher says: 18 °C in Paris.' });

    const google = googleServer.requests.slice(g);
    expect(google.map((r) => r.rejected)).toEqual([undefined, undefined]);
    expect(google[1]!.body.contents[1].parts[1].thoughtSignature).toBe(SIG_1); // the sub-run's loop replays it
    const openai = openaiServer.requests.slice(o);
    expect(openai).toHaveLength(2);
    const tool = openai[1]!.body.messages.find((m: { role: string }) => m.role === 'tool');
    expect(tool).toEqual({ role: 'tool', tool_call_id: 'call_lead_1', content: 'It is 18 °C (64.4 °F) in Paris.' });
    for (const req of openai) {
      expect(JSON.stringify(req.body)).not.toMatch(/thoughtSignature|dGhvdWdodC1zaWct/);
    }
  });

  it('a fallback from Gemini to OpenAI mid-loop, then Gemini again: no family sees the other one’s parts', async () => {
    const agent = defineAgent({
      name: 'weather',
      instructions: 'Answer in °F.',
      model: geminiModel(),
      fallbackModel: openaiModel(),
      tools: [getWeather, convert],
    });
    const session = new MemorySession();
    const g = googleServer.requests.length;
    const o = openaiServer.requests.length;
    googleServer.enqueue(
      { fixture: 'thought-call-1.sse' }, // turn 1: Gemini calls get_weather (signed)
      { fixture: 'error-400-invalid-argument.json' }, // turn 2: Gemini fails, not retryable: the fallback answers
      geminiText('18 °C is 64.4 °F.'), // turn 3: Gemini again
    );
    openaiServer.enqueue(toolCallsStream([{ id: 'call_oa_1', name: 'convert', args: { celsius: 18 } }]));

    const events = await collectEvents(run(agent, 'Paris in °F?', { session }));
    expect(events.at(-1)).toMatchObject({ type: 'run_completed', output: '18 °C is 64.4 °F.' });
    expect(events.filter((e) => e.type === 'fallback_activated')).toHaveLength(1);

    // the OpenAI request carries the Gemini-made turn as plain text and calls: no thought, no signature
    const [fallback] = openaiServer.requests.slice(o);
    const assistant = fallback!.body.messages.find((m: { role: string }) => m.role === 'assistant');
    expect(assistant.tool_calls.map((c: { function: { name: string } }) => c.function.name)).toEqual(['get_weather']);
    expect(JSON.stringify(fallback!.body)).not.toContain(SIG_1);
    expect(JSON.stringify(fallback!.body)).not.toContain(THOUGHT);

    // Gemini's third request: its own turn replayed with its signature, the OpenAI-made turn rebuilt
    const google = googleServer.requests.slice(g);
    expect(google).toHaveLength(3);
    expect(google.map((r) => r.rejected)).toEqual([undefined, undefined, undefined]);
    const contents = google[2]!.body.contents;
    expect(contents.map((c: { role: string }) => c.role)).toEqual(['user', 'model', 'user', 'model', 'user']);
    expect(contents[1].parts[1].thoughtSignature).toBe(SIG_1);
    expect(contents[3].parts).toEqual([
      { functionCall: { name: 'convert', args: { celsius: 18 } }, thoughtSignature: SKIP_THOUGHT_SIGNATURE },
    ]);
    expect(contents[4].parts).toEqual([{ functionResponse: { name: 'convert', response: { output: '64.4' } } }]);

    // the session keeps each family's parts on its own Items: Gemini's turn has them, OpenAI's has none
    const assistants = session.items.filter((i) => i.type === 'assistant');
    expect(assistants.map((a) => a.providerParts?.family)).toEqual(['gemini', undefined, 'gemini']);
  });
});
