import { describe, expect, it } from 'vitest';
import { openaiChatWire, openaiResponsesWire, type WireRequest } from '../src/node/testing/index.js';

/**
 * The request validators of the OpenAI kits refuse, in words, what Chat Completions and the Responses
 * API answer 400 to, and accept a valid tool loop: the rules the provider contract's tool loop relies on.
 */
const chat = (messages: unknown[], extra: Record<string, unknown> = {}) =>
  openaiChatWire.validateRequest(req('/v1/chat/completions', { model: 'm', messages, ...extra }));
const responses = (input: unknown, extra: Record<string, unknown> = {}) =>
  openaiResponsesWire.validateRequest(req('/v1/responses', { model: 'm', input, ...extra }));
const req = (path: string, body: unknown): WireRequest => ({ method: 'POST', path, headers: {}, body });

const user = { role: 'user', content: 'hi' };
const call = (id: string, args = '{"city":"Paris"}') => ({
  id,
  type: 'function',
  function: { name: 'get_weather', arguments: args },
});
const asks = (...calls: unknown[]) => ({ role: 'assistant', content: null, tool_calls: calls });
const answers = (id: string) => ({ role: 'tool', tool_call_id: id, content: 'sunny' });

describe('Chat Completions validator', () => {
  it('accepts a tool loop: calls each followed by their tool messages, then a final text', () => {
    const valid = [user, asks(call('c1')), answers('c1'), asks(call('c2'), call('c3')), answers('c3'), answers('c2')];
    expect(chat([...valid, { role: 'assistant', content: 'done' }])).toBe(undefined);
  });

  it.each([
    [
      'a tool message without a preceding tool_calls entry of its id',
      [user, answers('c1')],
      "Invalid parameter: messages[1]: messages with role 'tool' must be a response to a preceeding message with " +
        "'tool_calls' (tool_call_id c1)",
    ],
    [
      'a tool_calls entry not followed by its tool message',
      [user, asks(call('c1'), call('c2')), answers('c1'), user],
      "An assistant message with 'tool_calls' must be followed by tool messages responding to each " +
        "'tool_call_id'. The following tool_call_ids did not have response messages: c2 (at messages[3])",
    ],
    [
      'a tool_calls entry at the end of messages',
      [user, asks(call('c1'))],
      "An assistant message with 'tool_calls' must be followed by tool messages responding to each " +
        "'tool_call_id'. The following tool_call_ids did not have response messages: c1 (at the end of messages)",
    ],
    [
      'a call id used twice',
      [user, asks(call('c1')), answers('c1'), asks(call('c1')), answers('c1')],
      'messages[3].tool_calls[0]: duplicate tool call id c1',
    ],
    [
      'arguments that are not JSON',
      [user, asks(call('c1', '{"city": "Par')), answers('c1')],
      'messages[1].tool_calls[0].function: arguments are not valid JSON',
    ],
    [
      'arguments that are a JSON array',
      [user, asks(call('c1', '[1]')), answers('c1')],
      'messages[1].tool_calls[0].function: arguments must be a JSON object',
    ],
    [
      'an assistant message with neither content nor tool calls',
      [user, { role: 'assistant' }],
      'messages[1]: content is required unless tool_calls is given',
    ],
    ['an unknown role', [{ role: 'robot', content: 'x' }], 'messages[0].role is invalid'],
  ])('refuses %s', (_name, messages, reason) => {
    expect(chat(messages)).toBe(reason);
  });

  it('refuses stream_options without stream: true, and a body without messages', () => {
    expect(chat([user], { stream_options: { include_usage: true } })).toBe(
      "The 'stream_options' parameter is only allowed when 'stream' is enabled.",
    );
    expect(chat([])).toBe('messages must be a non-empty array');
  });

  it('routes POST /v1/chat/completions by its stream field, and nothing else', () => {
    const route = (method: string, path: string, body: unknown) =>
      openaiChatWire.route({ method, path, headers: {}, body });
    expect([
      route('POST', '/v1/chat/completions', { stream: true }),
      route('POST', '/v1/chat/completions', { stream: false }),
      route('POST', '/v1/chat/completions', {}),
      route('GET', '/v1/chat/completions', undefined),
      route('POST', '/v1/responses', { stream: true }),
    ]).toEqual(['stream', 'json', 'json', undefined, undefined]);
  });
});

describe('Responses API validator', () => {
  const fc = (id: string, args = '{"city":"Paris"}') => ({
    type: 'function_call',
    call_id: id,
    name: 'f',
    arguments: args,
  });
  const out = (id: string) => ({ type: 'function_call_output', call_id: id, output: 'sunny' });
  const msg = { type: 'message', role: 'user', content: 'hi' };

  it('accepts a tool loop, and a plain string input', () => {
    expect(responses([msg, fc('c1'), out('c1'), fc('c2'), fc('c3'), out('c3'), out('c2')])).toBe(undefined);
    expect(responses('hi')).toBe(undefined);
  });

  it.each([
    [
      'a function_call without its function_call_output',
      [msg, fc('c1'), fc('c2'), out('c1')],
      'No tool output found for function call c2.',
    ],
    [
      'a function_call_output without a function_call before it',
      [msg, out('c1'), fc('c1')],
      'No tool call found for function call output with call_id c1. (at input[1])',
    ],
    ['a call_id used twice', [msg, fc('c1'), out('c1'), fc('c1'), out('c1')], 'input[3]: duplicate call_id c1'],
    [
      'arguments that are not a JSON object',
      [msg, fc('c1', '"x"'), out('c1')],
      'input[1]: arguments must be a JSON object',
    ],
    [
      'an unknown item type',
      [msg, { type: 'tool_result', call_id: 'c1' }],
      'input[1].type "tool_result" is not an input item type',
    ],
  ])('refuses %s', (_name, input, reason) => {
    expect(responses(input)).toBe(reason);
  });
});
