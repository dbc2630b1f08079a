/**
 * Request shaping (docs/long-runs.md, "Request shaping"): a `prepareRequest` hook may change the Items sent, the
 * tools offered, the instructions, the model and the provider options of the next model request, without
 * changing the run's history unless it records Items; async hooks are awaited; a throw and a refused shape fail
 * the run with a typed error naming the hook, and nothing is sent.
 */
import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import {
  MemorySession,
  defineAgent,
  run,
  start,
  tool,
  type Item,
  type RunFailed,
  type RequestChanges,
} from '../src/index.js';
import { collectEvents, scriptedModel, sequentialIds } from '../src/testing/index.js';

const noop = tool({ name: 'noop', description: 'does nothing', parameters: z.object({}), execute: () => 'ok' });
const other = tool({ name: 'other', description: 'does more', parameters: z.object({}), execute: () => 'more' });

const history: Item[] = [
  { type: 'user', id: 'h1', text: 'old question' },
  { type: 'assistant', id: 'h2', text: 'old answer', toolCalls: [] },
];

describe('prepareRequest shapes one request', () => {
  it('the Items sent are the hook’s; the history loaded and the Items committed are the run’s own', async () => {
    const model = scriptedModel(['fine']);
    const session = new MemorySession(history);
    const agent = defineAgent({ name: 'a', instructions: 'be brief', model });
    const hooks = {
      prepareRequest: ({ request }: { request: { items: readonly Item[] } }) => ({ items: request.items.slice(-1) }),
    };
    const handle = start(agent, 'new question', { session, hooks, idGenerator: sequentialIds() });
    const result = await handle.result;
    expect(model.requests[0]!.items.map((i) => i.type === 'user' && i.text)).toEqual(['new question']);
    const stored = await session.load();
    expect(stored.slice(0, 2)).toEqual(history);
    expect(stored.slice(2).map((i) => i.type)).toEqual(['user', 'assistant']);
    expect(result.items).toEqual(stored.slice(2));
  });

  it('every request of the run goes through it: the second turn’s request is built from the full history again', async () => {
    const model = scriptedModel([{ toolCalls: [{ name: 'noop', callId: 'c1' }] }, 'done']);
    const agent = defineAgent({ name: 'a', instructions: '', model, tools: [noop] });
    const seen: number[] = [];
    const prepareRequest = ({ request }: { request: { items: readonly Item[] } }) => {
      seen.push(request.items.length);
      return { items: request.items.slice(0, 1) };
    };
    await collectEvents(run(agent, 'go', { hooks: { prepareRequest } }));
    // turn 1: [user]; turn 2: [user, assistant(call), result]: cut back to the user Item each time
    expect(seen).toEqual([1, 3]);
    expect(model.requests.map((r) => r.items.length)).toEqual([1, 1]);
  });

  it('activeTools offers a subset of the agent’s tools, in that order; instructions replace the system prompt', async () => {
    const model = scriptedModel(['ok']);
    const agent = defineAgent({ name: 'a', instructions: 'first', model, tools: [noop, other] });
    const prepareRequest = (): RequestChanges => ({ activeTools: ['other'], instructions: 'second' });
    await collectEvents(run(agent, 'go', { hooks: { prepareRequest } }));
    expect(model.requests[0]!.tools.map((t) => t.name)).toEqual(['other']);
    expect(model.requests[0]!.instructions).toBe('second');
  });

  it('model sends this request to another provider; the next request without a change goes to the agent’s', async () => {
    const primary = scriptedModel([{ toolCalls: [{ name: 'noop', callId: 'c1' }] }], { id: 'primary' });
    const cheap = scriptedModel(['from cheap'], { id: 'cheap' });
    const agent = defineAgent({ name: 'a', instructions: '', model: primary, tools: [noop] });
    const prepareRequest = ({ turn }: { turn: number }) => (turn === 2 ? { model: cheap } : undefined);
    const events = await collectEvents(run(agent, 'go', { hooks: { prepareRequest } }));
    const models = events.flatMap((e) => (e.type === 'model_request_started' ? [e.model] : []));
    expect(models).toEqual(['primary', 'cheap']);
    expect(primary.requests).toHaveLength(1);
    expect(cheap.requests).toHaveLength(1);
    expect(events.at(-1)).toMatchObject({ type: 'run_completed', output: 'from cheap' });
  });

  it('providerOptions ride on the request to the adapter', async () => {
    const model = scriptedModel(['ok']);
    const agent = defineAgent({ name: 'a', instructions: '', model });
    const providerOptions = { openai: { temperature: 0 }, anthropic: { top_k: 5 } };
    await collectEvents(run(agent, 'go', { hooks: { prepareRequest: () => ({ providerOptions }) } }));
    expect(model.requests[0]!.providerOptions).toEqual(providerOptions);
  });

  it('an async hook is awaited; the run’s hook sees what the agent’s hook returned', async () => {
    const model = scriptedModel(['ok']);
    const agentHook = async (): Promise<RequestChanges> => ({ instructions: 'from the agent' });
    const agent = defineAgent({ name: 'a', instructions: 'x', model, hooks: { prepareRequest: agentHook } });
    let seen = '';
    const runHook = ({ request }: { request: { instructions: string } }) => {
      seen = request.instructions;
      return Promise.resolve({ instructions: `${request.instructions}, then the run` });
    };
    await collectEvents(run(agent, 'go', { hooks: { prepareRequest: runHook } }));
    expect(seen).toBe('from the agent');
    expect(model.requests[0]!.instructions).toBe('from the agent, then the run');
  });

  it('beforeModelCall sees the shaped request', async () => {
    const model = scriptedModel(['ok']);
    const agent = defineAgent({ name: 'a', instructions: 'x', model });
    let seen = '';
    const hooks = {
      prepareRequest: () => ({ instructions: 'shaped' }),
      beforeModelCall: ({ request }: { request: { instructions: string } }) => void (seen = request.instructions),
    };
    await collectEvents(run(agent, 'go', { hooks }));
    expect(seen).toBe('shaped');
  });

  it('record appends user Items to the run’s history: reported, sent and committed', async () => {
    const model = scriptedModel(['ok']);
    const session = new MemorySession();
    const agent = defineAgent({ name: 'a', instructions: '', model });
    const note = { type: 'user', id: 'note-1', text: 'the repository is read-only' } as const;
    const prepareRequest = ({ turn }: { turn: number }) => (turn === 1 ? { record: [note] } : undefined);
    const events = await collectEvents(run(agent, 'go', { session, hooks: { prepareRequest } }));
    expect(events.find((e) => e.type === 'user_message_injected')).toMatchObject({ id: 'note-1', content: note.text });
    expect(model.requests[0]!.items.at(-1)).toEqual(note);
    expect((await session.load()).map((i) => i.type === 'user' && i.text)).toEqual(['go', note.text, false]);
  });
});

describe('prepareRequest failures are typed and send nothing', () => {
  const failed = async (prepareRequest: () => unknown, tools = [noop]) => {
    const model = scriptedModel(['never']);
    const agent = defineAgent({ name: 'a', instructions: '', model, tools });
    const events = await collectEvents(run(agent, 'go', { hooks: { prepareRequest } as never }));
    expect(model.requests).toHaveLength(0);
    return events.at(-1) as RunFailed;
  };

  it('a throw fails the run with a HookError naming prepareRequest', async () => {
    const end = await failed(() => {
      throw new Error('boom');
    });
    expect(end).toMatchObject({ type: 'run_failed', stopReason: 'internal_error' });
    expect(end.error).toMatchObject({ name: 'HookError', hook: 'prepareRequest' });
    expect(end.error.message).toContain('boom');
  });

  it('a rejection fails the run the same way', async () => {
    const end = await failed(() => Promise.reject(new Error('later')));
    expect(end.error).toMatchObject({ name: 'HookError', hook: 'prepareRequest' });
  });

  const refusals: [string, () => unknown, string, string][] = [
    [
      'a tool call whose result was left out',
      () => ({
        items: [{ type: 'assistant', id: 'a', text: '', toolCalls: [{ callId: 'c', name: 'noop', arguments: '{}' }] }],
      }),
      'items[1]',
      'call "c" has no result',
    ],
    [
      'a result whose call was left out',
      () => ({ items: [{ type: 'tool_result', callId: 'c', output: 'x', isError: false }] }),
      'items[0]',
      'no earlier call awaits',
    ],
    [
      'a user Item between a call and its result',
      () => ({
        items: [
          { type: 'assistant', id: 'a', text: '', toolCalls: [{ callId: 'c', name: 'noop', arguments: '{}' }] },
          { type: 'user', id: 'u', text: 'hi' },
          { type: 'tool_result', callId: 'c', output: 'x', isError: false },
        ],
      }),
      'items[1]',
      'before the result of call "c"',
    ],
    ['a value that is not an Item', () => ({ items: [{ type: 'system', text: 'x' }] }), 'items[0]', ''],
    ['a tool the agent does not have', () => ({ activeTools: ['shell'] }), 'activeTools[0]', 'its tools: noop'],
    ['an unknown field', () => ({ tools: [] }), 'tools', 'is not a field of RequestChanges'],
    ['a value that is not an object', () => 'shorter please', '(return value)', 'must be an object'],
    ['a model that is not a provider', () => ({ model: 'gpt-4o' }), 'model', 'ModelProvider'],
  ];
  for (const [what, hook, field, words] of refusals) {
    it(`refused: ${what} (RequestShapeError naming ${field})`, async () => {
      const end = await failed(hook);
      expect(end.error).toMatchObject({ name: 'RequestShapeError', hook: 'prepareRequest', field });
      expect(end.error.message).toContain(words);
      expect(end.partial.map((i) => i.type)).toEqual(['user']);
    });
  }
});
