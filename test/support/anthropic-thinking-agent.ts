/** The weather agent of the thinking round-trip specs: Anthropic with extended thinking and one tool. */
import { z } from 'zod';
import { anthropicMessages } from '../../src/anthropic/index.js';
import { defineAgent, tool } from '../../src/index.js';

const WEATHER: Record<string, string> = { Paris: 'sunny', Berlin: 'cloudy', Rome: 'warm' };
const lookup = tool({
  name: 'lookup',
  description: 'The weather of a city.',
  parameters: z.object({ city: z.string() }),
  execute: ({ city }) => WEATHER[city] ?? 'unknown',
});

/** Extended thinking as the specs enable it. */
export const THINKING = { type: 'enabled', budget_tokens: 2048 } as const;

/** The agent, on the Anthropic-shaped server at `baseURL`. */
export const thinkingWeatherAgent = (baseURL: string) =>
  defineAgent({
    name: 'weather',
    instructions: 'Answer with the weather.',
    model: anthropicMessages({ model: 'claude-test', apiKey: 'k', baseURL, thinking: THINKING, maxTokens: 8192 }),
    tools: [lookup],
  });
