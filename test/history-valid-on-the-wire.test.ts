import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  MemorySession,
  defineAgent,
  openaiChat,
  openaiResponses,
  run,
  tool,
  type Item,
  type ModelProvider,
  type RunEvent,
  type ToolResultItem,
} from '../src/index.js';
import { collectEvents, sequentialIds } from '../src/testing/index.js';
import {
  SSE_DONE,
  chatChunk,
  responsesBody,
  sseData,
  textStream,
  toolCallDelta,
  wireUsage,
  startOpenAIServer,
  type OpenAIServer,
  type RecordedRequest,
  type ScriptedResponse,
} from './support/openai-server.js';

/**
 * "The history is valid on the wire". A strict OpenAI-compatible server
 * answers 400 to any request whose assistant tool calls have arguments that
 * are not a JSON object, or share a call id. The first answer of the scenario
 * is broken (a tool call cut off mid-string by the token limit, or two calls
 * with one id); every later request must be valid, in this run and in the next
 * run on the same session, and so must everything committed. A history saved
 * with bad arguments is repaired before it is sent.
 */

type Api = 'chat' | 'responses';

/** The tool calls a request carries, as the wire has them. */
function wireCalls(api: Api, body: any): { id: string; args: string }[] {
  if (api === 'chat') {
    return (body.messages as any[]).flatMap((m) =>
      m.role === 'assistant'
        ? ((m.tool_calls ?? []) as any[]).map((c) => ({ id: c.id, args: c.function.arguments }))
        : [],
    );
  }
  return (body.input as any[])
    .filter((i) => i.type === 'function_call')
    .map((i) => ({ id: i.call_id, args: i.arguments }));
}

/** What a strict server objects to, or undefined for a valid request. */
function wireFault(api: Api, body: any): string | undefined {
  const seen = new Set<string>();
  for (const call of wireCalls(api, body)) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(call.args);
    } catch {
      return `tool call ${call.id}: arguments are not valid JSON`;
    }
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed))
      return `tool call ${call.id}: arguments must be an object`;
    if (seen.has(call.id)) return `duplicate tool call id ${call.id}`;
    seen.add(call.id);
  }
  return undefined;
}

const event = (type: string, body: Record<string, unknown>) =>
  `event: ${type}\ndata: ${JSON.stringify({ type, ...body })}\n\n`;

function responsesText(text: string): ScriptedResponse {
  return {
    sse: [
      event('response.output_text.delta', { delta: text, item_id: 'msg_1', output_index: 0, content_index: 0 }),
      event('response.completed', { response: responsesBody({ text, usage: [30, 3] }) }),
    ],
  };
}

/** Chat: a call to get_weather whose arguments stop inside a string, then `finish_reason: "length"`. */
const chatCutOff: ScriptedResponse = {
  sse: [
    sseData(
      chatChunk({ role: 'assistant', content: null, tool_calls: [toolCallDelta(0, '', 'call_1', 'get_weather')] }),
    ),
    sseData(chatChunk({ tool_calls: [toolCallDelta(0, '{"city": ')] })),
    sseData(chatChunk({ tool_calls: [toolCallDelta(0, '"Par')] })),
    sseData(chatChunk({}, { finishReason: 'length' })),
    sseData(chatChunk({}, { choices: [], usage: wireUsage(20, 8) })),
    SSE_DONE,
  ],
};

/** Responses: the same call, ended by `response.incomplete` (max_output_tokens). */
const responsesCutOff: ScriptedResponse = {
  sse: [
    event('response.created', { response: {} }),
    event('response.output_item.added', {
      output_index: 0,
      item: {
        type: 'function_call',
        id: 'fc_1',
        call_id: 'call_1',
        name: 'get_weather',
        arguments: '',
        status: 'in_progress',
      },
    }),
    event('response.function_call_arguments.delta', { item_id: 'fc_1', output_index: 0, delta: '{"city": ' }),
    event('response.function_call_arguments.delta', { item_id: 'fc_1', output_index: 0, delta: '"Par' }),
    event('response.incomplete', {
      response: {
        ...responsesBody({
          calls: [{ callId: 'call_1', name: 'get_weather', arguments: '{"city": "Par' }],
          usage: [20, 8],
        }),
        status: 'incomplete',
        incomplete_details: { reason: 'max_output_tokens' },
      },
    }),
  ],
};

/** Chat: two calls (index 0 and 1) that share the id `call_1`. */
const chatDuplicateIds: ScriptedResponse = {
  sse: [
    sseData(
      chatChunk({
        role: 'assistant',
        content: null,
        tool_calls: [toolCallDelta(0, '{"city":"Paris"}', 'call_1', 'get_weather')],
      }),
    ),
    sseData(chatChunk({ tool_calls: [toolCallDelta(1, '{"city":"Rome"}', 'call_1', 'get_weather')] })),
    sseData(chatChunk({}, { finishReason: 'tool_calls' })),
    sseData(chatChunk({}, { choices: [], usage: wireUsage(20, 8) })),
    SSE_DONE,
  ],
};

const CUT_OFF_ERROR =
  'Error: the arguments of get_weather are not valid JSON (Unterminated string in JSON at position 13): the ' +
  'response was cut off ' +
  'at its output token limit, so the tool was not run. Arguments received (13 characters): {"city": "Par';

let server: OpenAIServer;
let first: ScriptedResponse | undefined;
let api: Api;
beforeEach(async () => {
  first = undefined;
  server = await startOpenAIServer((req: RecordedRequest): ScriptedResponse => {
    const fault = wireFault(api, req.body);
    if (fault)
      return {
        json: { error: { message: fault, type: 'invalid_request_error', code: null, param: null } },
        status: 400,
      };
    const answer = first;
    first = undefined;
    return answer ?? (api === 'chat' ? textStream('It is sunny.') : responsesText('It is sunny.'));
  });
});
afterEach(() => server.close());

function setup(which: Api, opening?: ScriptedResponse) {
  api = which;
  first = opening;
  const ran: string[] = [];
  const getWeather = tool({
    name: 'get_weather',
    description: 'The weather in a city',
    parameters: z.object({ city: z.string() }),
    execute: ({ city }) => (ran.push(city), `${city}: sunny`),
  });
  const options = { model: 'gpt-test', apiKey: 'test-key', baseURL: server.baseURL };
  const model: ModelProvider = which === 'chat' ? openaiChat(options) : openaiResponses(options);
  const agent = defineAgent({ name: 'weather', instructions: 'Be brief.', model, tools: [getWeather] });
  return { agent, ran };
}

/** The history part of a request body, in a neutral shape: [role, text-or-output, calls?]. */
function historyOf(which: Api, body: any): unknown[] {
  if (which === 'chat') {
    return (body.messages as any[]).map((m) =>
      m.role === 'tool'
        ? ['tool', m.tool_call_id, m.content]
        : m.tool_calls
          ? [m.role, m.content, (m.tool_calls as any[]).map((c) => [c.id, c.function.name, c.function.arguments])]
          : [m.role, m.content],
    );
  }
  return [
    ['system', body.instructions],
    ...(body.input as any[]).map((i) =>
      i.type === 'function_call'
        ? ['call', i.call_id, i.name, i.arguments]
        : i.type === 'function_call_output'
          ? ['tool', i.call_id, i.output]
          : [i.role, i.content],
    ),
  ];
}

/** The same neutral shape for committed Items. */
function neutral(which: Api, items: readonly Item[]): unknown[] {
  const out: unknown[] = [['system', 'Be brief.']];
  for (const item of items) {
    if (item.type === 'user') out.push(['user', item.text]);
    else if (item.type === 'tool_result') out.push(['tool', item.callId, item.output]);
    else if (item.type === 'summary')
      continue; // a run without compaction stores none
    else if (which === 'chat') {
      out.push(
        item.toolCalls.length > 0
          ? [
              'assistant',
              item.text === '' ? null : item.text,
              item.toolCalls.map((c) => [c.callId, c.name, c.arguments]),
            ]
          : ['assistant', item.text],
      );
    } else {
      if (item.text !== '') out.push(['assistant', item.text]);
      for (const c of item.toolCalls) out.push(['call', c.callId, c.name, c.arguments]);
    }
  }
  return out;
}

const terminal = (events: RunEvent[]) => events.at(-1)!;
const failures = (events: RunEvent[]) =>
  events.flatMap((e) => (e.type === 'tool_call_failed' ? [[e.callId, e.name, e.error.name, e.error.message]] : []));

function everyCallValid(items: readonly Item[]): void {
  const ids = new Set<string>();
  for (const item of items) {
    if (item.type !== 'assistant') continue;
    for (const call of item.toolCalls) {
      expect(JSON.parse(call.arguments)).toBeTypeOf('object');
      expect(ids.has(call.callId)).toBe(false);
      ids.add(call.callId);
    }
  }
}

describe.each<Api>(['chat', 'responses'])('a tool call cut off by the token limit (%s)', (which) => {
  it('is stored with {} and a tool error carrying the raw text; both runs on the session complete', async () => {
    const { agent, ran } = setup(which, which === 'chat' ? chatCutOff : responsesCutOff);
    const session = new MemorySession();
    const ids = sequentialIds();

    const first = await collectEvents(run(agent, 'What is the weather in Paris?', { session, idGenerator: ids }));
    expect(terminal(first)).toMatchObject({ type: 'run_completed', output: 'It is sunny.' });
    expect(failures(first)).toEqual([
      ['call_1', 'get_weather', 'InvalidArgumentsError', CUT_OFF_ERROR.slice('Error: '.length)],
    ]);
    expect(first.filter((e) => e.type === 'tool_call_started')).toEqual([]);
    expect(ran).toEqual([]);

    const committed: Item[] = [
      { type: 'user', id: 'item-1', text: 'What is the weather in Paris?' },
      {
        type: 'assistant',
        id: 'item-2',
        text: '',
        toolCalls: [{ callId: 'call_1', name: 'get_weather', arguments: '{}' }],
      },
      { type: 'tool_result', callId: 'call_1', output: CUT_OFF_ERROR, isError: true },
      { type: 'assistant', id: 'item-3', text: 'It is sunny.', toolCalls: [] },
    ];
    expect(session.items).toEqual(committed);

    const second = await collectEvents(run(agent, 'And in Rome?', { session, idGenerator: ids }));
    expect(terminal(second)).toMatchObject({ type: 'run_completed', output: 'It is sunny.' });
    expect(session.items).toEqual([
      ...committed,
      { type: 'user', id: 'item-4', text: 'And in Rome?' },
      { type: 'assistant', id: 'item-5', text: 'It is sunny.', toolCalls: [] },
    ]);
    everyCallValid(session.items);

    expect(server.requests).toHaveLength(3);
    expect(server.requests.map((r) => r.path)).toEqual(
      Array(3).fill(which === 'chat' ? '/v1/chat/completions' : '/v1/responses'),
    );
    expect(historyOf(which, server.requests[0]!.body)).toEqual(neutral(which, committed.slice(0, 1)));
    expect(historyOf(which, server.requests[1]!.body)).toEqual(neutral(which, committed.slice(0, 3)));
    expect(historyOf(which, server.requests[2]!.body)).toEqual(neutral(which, session.items.slice(0, 5)));
    for (const req of server.requests) expect(wireFault(which, req.body)).toBeUndefined();
  });
});

describe('two tool calls with the same call id in one response (chat)', () => {
  it('the first runs, the duplicate gets a fresh id and a tool error; both runs complete', async () => {
    const { agent, ran } = setup('chat', chatDuplicateIds);
    const session = new MemorySession();
    const ids = sequentialIds();

    const first = await collectEvents(run(agent, 'Weather in Paris and Rome?', { session, idGenerator: ids }));
    expect(terminal(first)).toMatchObject({ type: 'run_completed', output: 'It is sunny.' });
    expect(ran).toEqual(['Paris']);
    const duplicate =
      'duplicate call id "call_1": an earlier call in this response already has that id, so this call was not run; ' +
      'call the tool again if you still need it';
    expect(failures(first)).toEqual([['item-2', 'get_weather', 'DuplicateCallIdError', duplicate]]);
    expect(
      first.filter((e) => e.type === 'tool_call_started').map((e) => e.type === 'tool_call_started' && e.callId),
    ).toEqual(['call_1']);

    const committed: Item[] = [
      { type: 'user', id: 'item-1', text: 'Weather in Paris and Rome?' },
      {
        type: 'assistant',
        id: 'item-3',
        text: '',
        toolCalls: [
          { callId: 'call_1', name: 'get_weather', arguments: '{"city":"Paris"}' },
          { callId: 'item-2', name: 'get_weather', arguments: '{"city":"Rome"}' },
        ],
      },
      { type: 'tool_result', callId: 'call_1', output: 'Paris: sunny', isError: false },
      { type: 'tool_result', callId: 'item-2', output: `Error: ${duplicate}`, isError: true },
      { type: 'assistant', id: 'item-4', text: 'It is sunny.', toolCalls: [] },
    ];
    expect(session.items).toEqual(committed);

    const second = await collectEvents(run(agent, 'Thanks.', { session, idGenerator: ids }));
    expect(terminal(second)).toMatchObject({ type: 'run_completed', output: 'It is sunny.' });
    expect(session.items).toEqual([
      ...committed,
      { type: 'user', id: 'item-5', text: 'Thanks.' },
      { type: 'assistant', id: 'item-6', text: 'It is sunny.', toolCalls: [] },
    ]);
    everyCallValid(session.items);

    expect(server.requests).toHaveLength(3);
    expect(historyOf('chat', server.requests[0]!.body)).toEqual(neutral('chat', committed.slice(0, 1)));
    expect(historyOf('chat', server.requests[1]!.body)).toEqual(neutral('chat', committed.slice(0, 4)));
    expect(historyOf('chat', server.requests[2]!.body)).toEqual(neutral('chat', session.items.slice(0, 6)));
  });
});

describe.each<Api>(['chat', 'responses'])('a history saved with unparseable arguments (%s)', (which) => {
  const savedError =
    'Error: the arguments of get_weather are not valid JSON (Unterminated string in JSON at position 13): ' +
    '{"city": "Par';
  const saved: Item[] = [
    { type: 'user', id: 'old-1', text: 'What is the weather in Paris?' },
    {
      type: 'assistant',
      id: 'old-2',
      text: '',
      toolCalls: [{ callId: 'call_1', name: 'get_weather', arguments: '{"city": "Par' }],
    },
    { type: 'tool_result', callId: 'call_1', output: savedError, isError: true },
    { type: 'assistant', id: 'old-3', text: 'That call was cut off.', toolCalls: [] },
  ];

  it('is repaired before it is sent, in every run; the stored Items stay as they were', async () => {
    const { agent, ran } = setup(which);
    const session = new MemorySession(saved);
    const ids = sequentialIds();
    const repaired: Item[] = [
      saved[0]!,
      {
        type: 'assistant',
        id: 'old-2',
        text: '',
        toolCalls: [{ callId: 'call_1', name: 'get_weather', arguments: '{}' }],
      },
      {
        type: 'tool_result',
        callId: 'call_1',
        isError: true,
        output:
          `${savedError}\n\nNote: the arguments of get_weather are not valid JSON (Unterminated string in ` +
          `JSON at position 13), ` +
          'so they are sent as {}. Arguments received (13 characters): {"city": "Par',
      },
      saved[3]!,
    ];

    const first = await collectEvents(run(agent, 'And in Rome?', { session, idGenerator: ids }));
    expect(terminal(first)).toMatchObject({ type: 'run_completed', output: 'It is sunny.' });
    const second = await collectEvents(run(agent, 'Thanks.', { session, idGenerator: ids }));
    expect(terminal(second)).toMatchObject({ type: 'run_completed', output: 'It is sunny.' });
    expect(ran).toEqual([]);

    const added: Item[] = [
      { type: 'user', id: 'item-1', text: 'And in Rome?' },
      { type: 'assistant', id: 'item-2', text: 'It is sunny.', toolCalls: [] },
      { type: 'user', id: 'item-3', text: 'Thanks.' },
      { type: 'assistant', id: 'item-4', text: 'It is sunny.', toolCalls: [] },
    ];
    expect(session.items).toEqual([...saved, ...added]);
    expect(server.requests).toHaveLength(2);
    expect(historyOf(which, server.requests[0]!.body)).toEqual(neutral(which, [...repaired, added[0]!]));
    expect(historyOf(which, server.requests[1]!.body)).toEqual(neutral(which, [...repaired, ...added.slice(0, 3)]));
    const results = server.requests.map((r) => wireFault(which, r.body) ?? 'valid');
    expect(results).toEqual(['valid', 'valid']);
    const toolResult = repaired[2] as ToolResultItem;
    expect(toolResult.output.split('{"city": "Par')).toHaveLength(3); // the raw text only in the result
  });
});
