/**
 * `providerOptions` on the Anthropic and Gemini wires (docs/long-runs.md, "Request shaping"): each adapter merges its
 * own family's object (`anthropic`, `gemini`) after its constructor's options (`request`, `config`) and before the
 * fields it owns, which the object cannot override; another family's object is not sent. Checked against the local
 * Anthropic and Gemini wire servers, which refuse what the real APIs would refuse.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineAgent, run, type RequestChanges } from '../src/index.js';
import { anthropicMessages } from '../src/model/anthropic/index.js';
import { gemini } from '../src/model/gemini/index.js';
import type { ModelProvider } from '../src/model/types.js';
import { collectEvents } from '../src/testing/index.js';
import { startAnthropicServer, type AnthropicServer } from './support/anthropic-server.js';
import { startGeminiServer, type GeminiServer } from './support/gemini-server.js';

let anthropic: AnthropicServer;
let google: GeminiServer;
beforeAll(async () => {
  anthropic = await startAnthropicServer();
  google = await startGeminiServer();
});
afterAll(async () => {
  await anthropic.close();
  await google.close();
});

const lookup = {
  name: 'lookup',
  description: 'Looks a word up.',
  parameters: { type: 'object', properties: { word: { type: 'string' } }, required: ['word'] },
  execute: () => 'found',
};

/** Runs one turn of an agent on `model` whose run hook returns `changes`; returns the last event's type. */
async function runShaped(model: ModelProvider, changes: RequestChanges) {
  const agent = defineAgent({ name: 'a', instructions: 'Be brief.', model, tools: [lookup] });
  const events = await collectEvents(run(agent, 'hi', { hooks: { prepareRequest: () => changes } }));
  return events.at(-1)?.type;
}

describe('providerOptions from prepareRequest reach the Anthropic wire', () => {
  const model = () =>
    anthropicMessages({
      model: 'claude-test',
      apiKey: 'k',
      baseURL: anthropic.baseURL,
      request: { temperature: 1, top_p: 0.5 },
    });

  it('the anthropic object is merged after the constructor’s request; other families’ objects are not sent', async () => {
    anthropic.enqueue({ fixture: 'text.sse' });
    const n = anthropic.requests.length;
    const providerOptions = { anthropic: { temperature: 0.2, top_k: 3 }, openai: { seed: 7 }, gemini: { topK: 9 } };
    expect(await runShaped(model(), { providerOptions })).toBe('run_completed');
    const { body, rejected } = anthropic.requests[n]!;
    expect(rejected).toBeUndefined();
    expect(body).toMatchObject({ temperature: 0.2, top_k: 3, top_p: 0.5 });
    expect(body.seed).toBeUndefined();
    expect(body.topK).toBeUndefined();
  });

  it('cannot override what loopctl owns: model, max_tokens, system, messages, tools, thinking, stream', async () => {
    anthropic.enqueue({ fixture: 'text.sse' });
    const n = anthropic.requests.length;
    const owned = {
      model: 'other',
      max_tokens: 1,
      system: 'injected',
      messages: [],
      tools: [],
      thinking: { type: 'adaptive' },
      stream: false,
    };
    expect(await runShaped(model(), { providerOptions: { anthropic: { ...owned, temperature: 0 } } })).toBe(
      'run_completed',
    );
    const { body, rejected } = anthropic.requests[n]!;
    expect(rejected).toBeUndefined();
    expect(body).toMatchObject({ model: 'claude-test', max_tokens: 4096, stream: true, temperature: 0 });
    expect(body.system).toEqual([{ type: 'text', text: 'Be brief.' }]);
    expect(body.messages).toEqual([{ role: 'user', content: [{ type: 'text', text: 'hi' }] }]);
    expect(body.tools.map((t: { name: string }) => t.name)).toEqual(['lookup']);
    expect(body.thinking).toBeUndefined();
  });
});

describe('providerOptions from prepareRequest reach the Gemini wire', () => {
  const model = () =>
    gemini({
      model: 'gemini-2.5-flash',
      apiKey: 'k',
      baseURL: google.url,
      config: { temperature: 1, topP: 0.5 },
    });

  it('the gemini object is merged into the config after the constructor’s; other families’ are not sent', async () => {
    google.enqueue({ fixture: 'text.sse' });
    const n = google.requests.length;
    const providerOptions = { gemini: { temperature: 0.2, topK: 3 }, anthropic: { top_k: 9 }, openai: { seed: 7 } };
    expect(await runShaped(model(), { providerOptions })).toBe('run_completed');
    const { body, rejected } = google.requests[n]!;
    expect(rejected).toBeUndefined();
    expect(body.generationConfig).toEqual({ temperature: 0.2, topK: 3, topP: 0.5 });
    expect(JSON.stringify(body)).not.toMatch(/top_k|seed/);
  });

  it('cannot override what loopctl owns: the system instruction, the tools, function calling, the request options', async () => {
    google.enqueue({ fixture: 'text.sse' });
    const n = google.requests.length;
    const owned = {
      systemInstruction: 'injected',
      tools: [{ googleSearch: {} }],
      automaticFunctionCalling: { disable: false },
      automaticContinuation: true,
      httpOptions: { headers: { 'x-injected': '1' } },
    };
    expect(await runShaped(model(), { providerOptions: { gemini: { ...owned, temperature: 0 } } })).toBe(
      'run_completed',
    );
    const { body, rejected, headers } = google.requests[n]!;
    expect(rejected).toBeUndefined();
    expect(body.systemInstruction).toEqual({ parts: [{ text: 'Be brief.' }] });
    expect(body.tools.map((t: object) => Object.keys(t)[0])).toEqual(['functionDeclarations']);
    expect(body.generationConfig).toEqual({ temperature: 0, topP: 0.5 });
    expect(headers['x-injected']).toBeUndefined();
    expect(google.requests[n]!.model).toBe('gemini-2.5-flash');
  });
});
