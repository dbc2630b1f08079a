/**
 * Every option of the Anthropic and Gemini adapters that is out of shape fails at construction with a
 * `ConfigurationError` naming it, never later as an SDK error on the first call (an `Invalid URL`, a
 * `startsWith is not a function`) or as garbage on the wire (a `request: 'abc'` spread into the body as `{0:'a'…}`).
 */
import { describe, expect, it } from 'vitest';
import { anthropicMessages, type AnthropicOptions } from '../src/anthropic/index.js';
import { ConfigurationError } from '../src/errors.js';
import { gemini, type GeminiOptions } from '../src/model/gemini/index.js';

const fieldOf = (make: () => unknown): string | undefined => {
  try {
    make();
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigurationError);
    return (err as ConfigurationError).field;
  }
  return undefined;
};

describe('anthropicMessages: a bad option is a ConfigurationError naming it', () => {
  const bad: [Record<string, unknown>, string][] = [
    [{ apiKey: 5 }, 'apiKey'],
    [{ apiKey: '' }, 'apiKey'],
    [{ baseURL: 'not a url' }, 'baseURL'],
    [{ baseURL: 'ftp://127.0.0.1' }, 'baseURL'],
    [{ baseURL: 8080 }, 'baseURL'],
    [{ stream: 'yes' }, 'stream'],
    [{ request: 'abc' }, 'request'],
    [{ request: [1] }, 'request'],
    [{ request: null }, 'request'],
    [{ client: {} }, 'client'],
    [{ thinking: null }, 'thinking'],
    [{ cache: [] }, 'cache'],
    [{ cache: { system: 'yes' } }, 'cache.system'],
    [{ cache: { history: 1 } }, 'cache.history'],
  ];
  for (const [over, field] of bad) {
    it(`${JSON.stringify(over)} names ${field}`, () => {
      const options = { model: 'claude-test', apiKey: 'k', ...over } as unknown as AnthropicOptions;
      expect(fieldOf(() => anthropicMessages(options))).toBe(field);
    });
  }

  it('good options still construct', () => {
    const options: AnthropicOptions = {
      model: 'claude-test',
      apiKey: 'k',
      baseURL: 'http://127.0.0.1:1',
      stream: false,
      request: { temperature: 0 },
      cache: { system: true, tools: false },
    };
    expect(anthropicMessages(options).id).toBe('anthropic:claude-test');
  });
});

describe('gemini: a bad option is a ConfigurationError naming it', () => {
  const bad: [Record<string, unknown>, string][] = [
    [{ apiKey: 5 }, 'apiKey'],
    [{ baseURL: 'not a url' }, 'baseURL'],
    [{ apiVersion: '' }, 'apiVersion'],
    [{ stream: 1 }, 'stream'],
    [{ config: 'x' }, 'config'],
    [{ config: null }, 'config'],
    [{ config: { tools: { googleSearch: {} } } }, 'config.tools'],
    [{ client: { models: {} } }, 'client'],
  ];
  for (const [over, field] of bad) {
    it(`${JSON.stringify(over)} names ${field}`, () => {
      const options = { model: 'gemini-test', apiKey: 'k', ...over } as unknown as GeminiOptions;
      expect(fieldOf(() => gemini(options))).toBe(field);
    });
  }

  it('good options still construct', () => {
    const options: GeminiOptions = {
      model: 'gemini-test',
      apiKey: 'k',
      baseURL: 'https://127.0.0.1:1',
      apiVersion: 'v1',
      stream: true,
      config: { temperature: 0, tools: [{ googleSearch: {} }] },
    };
    expect(gemini(options).id).toBe('gemini:gemini-test');
  });
});
