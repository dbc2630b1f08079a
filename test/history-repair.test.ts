import { describe, expect, it } from 'vitest';
import {
  takenIds,
  RAW_ARGUMENTS_LIMIT,
  callIdsOf,
  checkArguments,
  markRefused,
  receivedText,
  refusedFor,
  repairHistory,
  repairResponseCalls,
} from '../src/engine/repair.js';
import type { Item, ToolCall } from '../src/items.js';
import { MemorySession, defineAgent, run } from '../src/index.js';
import { collectEvents, scriptedModel, sequentialIds } from '../src/testing/index.js';

/** The pure repair behind "the history is valid on the wire": live responses and loaded histories. */

const ids = (prefix = 'new') => {
  let n = 0;
  return () => `${prefix}-${++n}`;
};
const call = (callId: string, args: string, name = 'f'): ToolCall => ({ callId, name, arguments: args });
const INTERRUPTED = 'interrupted: the run was stopped before this call finished';

describe('checkArguments', () => {
  it('keeps a JSON object, reads empty text as {}, and names what is wrong with anything else', () => {
    expect(checkArguments('f', '{"a":1}')).toEqual({ ok: true, text: '{"a":1}' });
    expect(checkArguments('f', ' {"a": [1]} ')).toEqual({ ok: true, text: ' {"a": [1]} ' });
    expect(checkArguments('f', '')).toEqual({ ok: true, text: '{}' });
    expect(checkArguments('f', ' \n')).toEqual({ ok: true, text: '{}' });
    expect(checkArguments('f', '{"a":')).toEqual({
      ok: false,
      reason: 'the arguments of f are not valid JSON (Unexpected end of JSON input)',
      raw: '{"a":',
    });
    expect(checkArguments('f', '[1]')).toEqual({
      ok: false,
      reason: 'the arguments of f must be a JSON object, not an array',
      raw: '[1]',
    });
    expect(checkArguments('f', '"s"')).toEqual({
      ok: false,
      reason: 'the arguments of f must be a JSON object, not a string',
      raw: '"s"',
    });
    expect(checkArguments('f', '3')).toEqual({
      ok: false,
      reason: 'the arguments of f must be a JSON object, not a number',
      raw: '3',
    });
    expect(checkArguments('f', 'true')).toEqual({
      ok: false,
      reason: 'the arguments of f must be a JSON object, not a boolean',
      raw: 'true',
    });
    expect(checkArguments('f', 'null')).toEqual({
      ok: false,
      reason: 'the arguments of f must be a JSON object, not null',
      raw: 'null',
    });
    expect(checkArguments('f', 42)).toEqual({ ok: false, reason: 'the arguments of f are not text', raw: '42' });
  });
});

describe('receivedText', () => {
  it('shows text up to the limit whole, and longer text as its head and tail', () => {
    expect(RAW_ARGUMENTS_LIMIT).toBe(2_000);
    expect(receivedText('{"a":')).toBe('Arguments received (5 characters): {"a":');
    const exact = 'x'.repeat(2_000);
    expect(receivedText(exact)).toBe(`Arguments received (2000 characters): ${exact}`);
    const long = `${'h'.repeat(1_500)}${'m'.repeat(1_001)}${'t'.repeat(500)}`;
    expect(receivedText(long)).toBe(
      `Arguments received (3001 characters): ${'h'.repeat(1_500)} … [1001 characters left out] … ${'t'.repeat(500)}`,
    );
  });
});

describe('repairResponseCalls', () => {
  const context = (over: { cutOff?: boolean; taken?: string[]; newId?: () => string } = {}) => ({
    cutOff: over.cutOff ?? false,
    taken: new Set(over.taken ?? []),
    newId: over.newId ?? ids(),
  });

  it('returns the same array when every call is usable', () => {
    const calls = [call('a', '{"x":1}'), call('b', '{}')];
    const out = repairResponseCalls(calls, context({ taken: ['z'] }));
    expect(out.calls).toBe(calls);
    expect(out.changed).toBe(false);
    expect(out.faults.size).toBe(0);
  });

  it('stores unusable arguments as {} and refuses the call, saying why and carrying the raw text', () => {
    const out = repairResponseCalls(
      [call('a', '{"city": "Par', 'weather'), call('b', '[1]'), call('c', '')],
      context({ cutOff: true }),
    );
    expect(out.calls).toEqual([call('a', '{}', 'weather'), call('b', '{}'), call('c', '{}')]);
    expect([...out.faults.entries()]).toEqual([
      [
        call('a', '{}', 'weather'),
        {
          name: 'InvalidArgumentsError',
          message:
            'the arguments of weather are not valid JSON (Unterminated string in JSON at position 13): the ' +
            'response was cut off at ' +
            'its output token limit, so the tool was not run. Arguments received (13 characters): {"city": "Par',
        },
      ],
      [
        call('b', '{}'),
        {
          name: 'InvalidArgumentsError',
          message:
            'the arguments of f must be a JSON object, not an array: the response was cut off at its output ' +
            'token limit, so the ' +
            'tool was not run. Arguments received (3 characters): [1]',
        },
      ],
    ]);
    const [a, b, c] = out.calls;
    expect(out.faults.has(a!) && out.faults.has(b!) && !out.faults.has(c!)).toBe(true); // empty arguments run as {}
  });

  it('a duplicate id in one response gets a fresh id and is refused; the first call keeps its id and runs', () => {
    const out = repairResponseCalls(
      [call('a', '{"n":1}'), call('a', '{"n":2}'), call('a', '{"n":')],
      context({ newId: ids() }),
    );
    expect(out.calls).toEqual([call('a', '{"n":1}'), call('new-1', '{"n":2}'), call('new-2', '{}')]);
    const dup =
      'duplicate call id "a": an earlier call in this response already has that id, so this call was not run; ' +
      'call the tool again if you still need it';
    expect([...out.faults.values()]).toEqual([
      { name: 'DuplicateCallIdError', message: dup },
      {
        name: 'DuplicateCallIdError',
        message:
          `${dup}; also, the arguments of f are not valid JSON (Unexpected end of JSON input). ` +
          `Arguments received (5 characters): {"n":`,
      },
    ]);
    expect(out.faults.has(out.calls[0]!)).toBe(false);
  });

  it('an empty id, or one an earlier call of the history has, is replaced silently (the call runs)', () => {
    const out = repairResponseCalls([call('', '{}'), call('old', '{}'), call('b', '{}')], context({ taken: ['old'] }));
    expect(out.calls).toEqual([call('new-1', '{}'), call('new-2', '{}'), call('b', '{}')]);
    expect(out.faults.size).toBe(0);
  });

  it('a fresh id skips ids already in use, in the history and in the response', () => {
    const given = ['old', 'b', 'x-3'];
    let n = 0;
    const out = repairResponseCalls([call('a', '{}'), call('a', '{}'), call('b', '{}')], {
      cutOff: false,
      taken: new Set(['old']),
      newId: () => given[n++] ?? `x-${n}`,
    });
    expect(out.calls.map((c) => c.callId)).toEqual(['a', 'x-3', 'b']);
  });

  it('a refused call is marked for dispatch by its stored object', () => {
    const out = repairResponseCalls([call('a', 'nope'), call('b', '{}')], context());
    markRefused(out.faults);
    expect(refusedFor(out.calls[0]!)?.name).toBe('InvalidArgumentsError');
    expect(refusedFor(out.calls[1]!)).toBeUndefined();
    expect(refusedFor(call('a', '{}'))).toBeUndefined(); // an equal object is not the stored one
  });
});

describe('repairHistory', () => {
  const user = (id: string): Item => ({ type: 'user', id, text: id });
  const assistant = (id: string, calls: ToolCall[], text = ''): Item => ({
    type: 'assistant',
    id,
    text,
    toolCalls: calls,
  });
  const result = (callId: string, output: string, isError = false): Item => ({
    type: 'tool_result',
    callId,
    output,
    isError,
  });

  it('a valid history comes back with the same objects', () => {
    const items = [
      user('u1'),
      assistant('a1', [call('c1', '{}'), call('c2', '{"q":1}')]),
      result('c1', 'one'),
      result('c2', 'two'),
      assistant('a2', [], 'done'),
    ];
    const out = repairHistory(items, ids());
    expect(out).toEqual(items);
    out.forEach((item, i) => expect(item).toBe(items[i]));
  });

  it('bad arguments are sent as {} and the paired result carries the reason and the raw text', () => {
    const items = [
      user('u1'),
      assistant('a1', [call('c1', '{"city": "Par', 'weather'), call('c2', '')]),
      result('c1', 'Error: cut', true),
      result('c2', 'ok'),
    ];
    expect(repairHistory(items, ids())).toEqual([
      user('u1'),
      assistant('a1', [call('c1', '{}', 'weather'), call('c2', '{}')]),
      result(
        'c1',
        'Error: cut\n\nNote: the arguments of weather are not valid JSON (Unterminated string in JSON at ' +
          'position 13), so they are ' +
          'sent as {}. Arguments received (13 characters): {"city": "Par',
        true,
      ),
      result('c2', 'ok'),
    ]);
  });

  it('a reused id is renamed together with its paired result, within one Item and across Items', () => {
    const items = [
      user('u1'),
      assistant('a1', [call('c', '{"n":1}'), call('c', '{"n":2}')]),
      result('c', 'first'),
      result('c', 'second'),
      assistant('a2', [call('c', '{"n":3}')]),
      result('c', 'third'),
    ];
    expect(repairHistory(items, ids())).toEqual([
      user('u1'),
      assistant('a1', [call('c', '{"n":1}'), call('new-1', '{"n":2}')]),
      result('c', 'first'),
      result('new-1', 'second'),
      assistant('a2', [call('new-2', '{"n":3}')]),
      result('new-2', 'third'),
    ]);
  });

  it('ids in `taken` count as used; an empty id is replaced', () => {
    const items = [assistant('a1', [call('c', '{}'), call('', '{}')]), result('c', 'x'), result('', 'y')];
    expect(repairHistory(items, ids(), new Set(['c']))).toEqual([
      assistant('a1', [call('new-1', '{}'), call('new-2', '{}')]),
      result('new-1', 'x'),
      result('new-2', 'y'),
    ]);
  });

  it('an unpaired call gets an interrupted result (noted if its arguments were bad); an orphan result goes', () => {
    const items = [
      result('c0', 'before any call'),
      user('u1'),
      assistant('a1', [call('c1', '{}'), call('c2', '[')]),
      result('zz', 'pairs nothing'),
      user('u2'),
    ];
    expect(repairHistory(items, ids())).toEqual([
      user('u1'),
      assistant('a1', [call('c1', '{}'), call('c2', '{}')]),
      { type: 'tool_result', callId: 'c1', output: INTERRUPTED, isError: true, interrupted: true },
      {
        type: 'tool_result',
        callId: 'c2',
        isError: true,
        interrupted: true,
        output:
          `${INTERRUPTED}\n\nNote: the arguments of f are not valid JSON (Unexpected end of JSON input), so ` +
          `they are sent as {}. ` +
          'Arguments received (1 characters): [',
      },
      user('u2'),
    ]);
  });

  it('results are placed right after their call, in call order; one before its call pairs nothing', () => {
    const items = [
      result('c1', 'too early'),
      assistant('a1', [call('c1', '{}'), call('c2', '{}')]),
      user('steer'),
      result('c2', 'two'),
      result('c1', 'one'),
    ];
    expect(repairHistory(items, ids())).toEqual([
      assistant('a1', [call('c1', '{}'), call('c2', '{}')]),
      result('c1', 'one'),
      result('c2', 'two'),
      user('steer'),
    ]);
  });

  it('callIdsOf collects every call id of every list', () => {
    expect([
      ...callIdsOf(
        [assistant('a', [call('x', '{}')])],
        [user('u'), assistant('b', [call('y', '{}'), call('x', '{}')])],
      ),
    ]).toEqual(['x', 'y']);
  });
});

describe('an Item[] input is repaired like a loaded history', () => {
  it('its ids are kept apart from the session history; what is sent and committed is repaired', async () => {
    const stored: Item[] = [
      { type: 'user', id: 's1', text: 'first' },
      { type: 'assistant', id: 's2', text: '', toolCalls: [call('c1', '{}')] },
      { type: 'tool_result', callId: 'c1', output: 'done', isError: false },
    ];
    const input: Item[] = [
      { type: 'assistant', id: 'i1', text: '', toolCalls: [call('c1', '{"a":')] },
      { type: 'tool_result', callId: 'c1', output: 'Error: broken', isError: true },
      { type: 'user', id: 'i2', text: 'again' },
    ];
    const model = scriptedModel(['ok']);
    const session = new MemorySession(stored);
    const agent = defineAgent({ name: 'a', instructions: '', model });
    const events = await collectEvents(run(agent, input, { session, idGenerator: sequentialIds() }));
    expect(events.at(-1)).toMatchObject({ type: 'run_completed', output: 'ok' });
    const repaired: Item[] = [
      { type: 'assistant', id: 'i1', text: '', toolCalls: [call('item-1', '{}')] },
      {
        type: 'tool_result',
        callId: 'item-1',
        isError: true,
        output:
          'Error: broken\n\nNote: the arguments of f are not valid JSON (Unexpected end of JSON input), so ' +
          'they are sent as {}. ' +
          'Arguments received (5 characters): {"a":',
      },
      { type: 'user', id: 'i2', text: 'again' },
    ];
    expect(model.requests[0]!.items).toEqual([...stored, ...repaired]);
    expect(session.items).toEqual([
      ...stored,
      ...repaired,
      { type: 'assistant', id: 'item-2', text: 'ok', toolCalls: [] },
    ]);
  });
});

describe('scriptedModel refuses a history a strict API refuses', () => {
  const first = (items: Item[]) => {
    let error: unknown;
    scriptedModel(['x'])
      .call({ instructions: '', items, tools: [], stream: false })
      .subscribe({ error: (e) => (error = e) });
    return error;
  };
  const assistant = (calls: ToolCall[]): Item => ({ type: 'assistant', id: 'a', text: '', toolCalls: calls });
  const result = (callId: string): Item => ({ type: 'tool_result', callId, output: 'ok', isError: false });

  it.each([
    [
      'arguments that are not JSON',
      [assistant([call('c1', '{"a":')]), result('c1')],
      'tool call c1: arguments must be a JSON object',
    ],
    ['empty arguments', [assistant([call('c1', '')]), result('c1')], 'tool call c1: arguments must be a JSON object'],
    ['an array', [assistant([call('c1', '[]')]), result('c1')], 'tool call c1: arguments must be a JSON object'],
    [
      'a reused id',
      [assistant([call('c1', '{}')]), result('c1'), assistant([call('c1', '{}')]), result('c1')],
      'duplicate tool call id c1',
    ],
    ['an unpaired call', [assistant([call('c1', '{}')])], 'tool calls without results: c1'],
  ] as const)('%s → a 400', (_name, items, message) => {
    expect(first([...items])).toMatchObject({
      name: 'ModelCallError',
      status: 400,
      message: `invalid request: ${message}`,
    });
  });
});

describe('takenIds', () => {
  it('holds the ids of the history and of the items, reading only what was added since the last call', () => {
    const owner = {};
    const a = (id: string, ...ids: string[]): Item => ({
      type: 'assistant',
      id,
      text: '',
      toolCalls: ids.map((c) => call(c, '{}')),
    });
    const history = [a('h', 'h1', 'h2')];
    const items: Item[] = [{ type: 'user', id: 'u', text: 'x' }, a('i', 'i1')];
    expect([...takenIds(owner, history, items)]).toEqual(['h1', 'h2', 'i1']);
    items.push(a('j', 'j1'));
    history.push(a('late', 'never-read')); // the history is read once
    expect([...takenIds(owner, history, items)]).toEqual(['h1', 'h2', 'i1', 'j1']);
    expect([...takenIds({}, [], items)]).toEqual(['i1', 'j1']); // per owner
  });
});
