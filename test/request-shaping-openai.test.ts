/**
 * `providerOptions` on the wire (docs/long-runs.md, "Request shaping"): the OpenAI adapters merge
 * `providerOptions.openai` into the request body after their constructor's `request` options and before the
 * fields they own; another family's options are not sent. Checked against the local OpenAI wire server.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineAgent, run } from '../src/index.js';
import { openaiChat, openaiResponses } from '../src/model/openai/index.js';
import { collectEvents } from '../src/testing/index.js';
import { startOpenAIServer, type OpenAIServer } from './support/openai-server.js';

let server: OpenAIServer;
beforeAll(async () => void (server = await startOpenAIServer()));
afterAll(() => server.close());

const providerOptions = {
  openai: { temperature: 0.2, max_completion_tokens: 64, model: 'not-this-one' },
  anthropic: { top_k: 3 },
};

describe('providerOptions from prepareRequest reach the OpenAI wire', () => {
  for (const [name, make, fixture] of [
    ['chat completions', openaiChat, 'chat-text-usage.sse'],
    ['responses', openaiResponses, 'responses-text.sse'],
  ] as const) {
    it(`${name}: the openai object is merged into the body; the adapter’s own fields win; others are not sent`, async () => {
      const model = make({ model: 'gpt-test', apiKey: 'k', baseURL: server.baseURL, request: { temperature: 1 } });
      const agent = defineAgent({ name: 'a', instructions: '', model });
      server.enqueue({ fixture });
      const n = server.requests.length;
      const events = await collectEvents(run(agent, 'hi', { hooks: { prepareRequest: () => ({ providerOptions }) } }));
      expect(events.at(-1)?.type).toBe('run_completed');
      const body = server.requests[n]!.body;
      expect(body.temperature).toBe(0.2);
      expect(body.max_completion_tokens).toBe(64);
      expect(body.model).toBe('gpt-test');
      expect(body.top_k).toBeUndefined();
    });
  }
});
