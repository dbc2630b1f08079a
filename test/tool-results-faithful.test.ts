import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineAgent, run, toJsonText, tool, type RunEvent } from '../src/index.js';
import { collectEvents, scriptedModel } from '../src/testing/index.js';

/**
 * A tool's result reaches the model as faithful text: JSON with a marker where
 * a cycle was cut, BigInts as decimal strings, a Map as its entries, a Set as
 * its values, a Date as its ISO string. A result that has no text form at all
 * (a function, a symbol) is a tool error that says why. The model never gets
 * "[object Object]" or a function's source code.
 */

/** Runs one call of a tool returning `value`; returns what the model saw and the tool's event. */
async function modelSees(value: () => unknown) {
  const t = tool({ name: 'produce', description: 'd', parameters: z.object({}), execute: () => value() as string });
  const model = scriptedModel([{ toolCalls: [{ name: 'produce', callId: 'c1' }] }, 'done']);
  const agent = defineAgent({ name: 'a', instructions: '', model, tools: [t] });
  const events: RunEvent[] = await collectEvents(run(agent, 'go'));
  expect(events.at(-1)).toMatchObject({ type: 'run_completed' });
  const result = model.requests[1]!.items.find((i) => i.type === 'tool_result')!;
  const event = events.find((e) => e.type === 'tool_call_completed' || e.type === 'tool_call_failed')!;
  expect(result.type === 'tool_result' && result.output).not.toContain('[object Object]');
  return { result, event };
}

const CANNOT = 'Error: the result of tool produce cannot be sent to the model:';

function sourceOf(): string {
  return 'the source code of this function';
}

describe('tool results serialise faithfully or fail with a reason', () => {
  it('a cyclic object: JSON with "[Circular]" where the cycle was cut', async () => {
    const { result, event } = await modelSees(() => {
      const node: Record<string, unknown> = { name: 'root', children: [] };
      (node['children'] as unknown[]).push({ name: 'leaf', parent: node });
      node['self'] = node;
      return node;
    });
    const text = '{"name":"root","children":[{"name":"leaf","parent":"[Circular]"}],"self":"[Circular]"}';
    expect(result).toEqual({ type: 'tool_result', callId: 'c1', output: text, isError: false });
    expect(event).toMatchObject({ type: 'tool_call_completed', output: text });
  });

  it('a BigInt: its decimal digits, exactly (also nested)', async () => {
    const big = await modelSees(() => 123456789012345678901234567890n);
    expect(big.result).toMatchObject({ output: '"123456789012345678901234567890"', isError: false });
    const nested = await modelSees(() => ({ id: 2n ** 64n }));
    expect(nested.result).toMatchObject({ output: '{"id":"18446744073709551616"}', isError: false });
  });

  it('a Map: an array of [key, value] entries; a Set: an array; a Date: its ISO string', async () => {
    const map = new Map<unknown, unknown>([
      ['a', 1],
      [{ k: 1 }, new Set([1, 2n])],
    ]);
    expect((await modelSees(() => map)).result).toMatchObject({ output: '[["a",1],[{"k":1},[1,"2"]]]' });
    const when = new Date(Date.UTC(2025, 0, 2, 3, 4, 5));
    expect((await modelSees(() => ({ when }))).result).toMatchObject({ output: '{"when":"2025-01-02T03:04:05.000Z"}' });
  });

  it('a function: a tool error that says why, never the source code', async () => {
    const { result, event } = await modelSees(() => sourceOf);
    const message =
      'the result of tool produce cannot be sent to the model: ' +
      'it is a function ([function sourceOf]), which has no JSON form';
    expect(result).toEqual({ type: 'tool_result', callId: 'c1', output: `Error: ${message}`, isError: true });
    expect(event).toMatchObject({
      type: 'tool_call_failed',
      error: { name: 'ToolExecutionError', message, toolName: 'produce', callId: 'c1' },
    });
    expect(JSON.stringify(result)).not.toContain('the source code');
  });

  it('a Symbol: a tool error that says why', async () => {
    const { result } = await modelSees(() => Symbol('token'));
    expect(result).toEqual({
      type: 'tool_result',
      callId: 'c1',
      isError: true,
      output: `${CANNOT} it is a symbol (Symbol(token)), which has no JSON form`,
    });
  });

  it('nested functions and symbols become markers; a throwing getter is marked unreadable', async () => {
    const value = {
      run: sourceOf,
      tag: Symbol('t'),
      get broken(): never {
        throw new Error('no');
      },
      ok: 1,
    };
    expect((await modelSees(() => value)).result).toMatchObject({
      output: '{"run":"[function sourceOf]","tag":"Symbol(t)","broken":"[unreadable]","ok":1}',
      isError: false,
    });
  });

  it('a Proxy that throws on every trap: a tool error that says the result cannot be read', async () => {
    const trapThrower = new Proxy(
      {},
      {
        get: () => () => {
          throw new Error('trap');
        },
      },
    ) as ProxyHandler<object>;
    const hostile = new Proxy({}, trapThrower);
    expect((await modelSees(() => hostile)).result).toEqual({
      type: 'tool_result',
      callId: 'c1',
      isError: true,
      output: `${CANNOT} it cannot be read (it threw while being serialised)`,
    });
  });

  it('strings pass as they are; undefined is the empty string; plain JSON is unchanged', async () => {
    expect((await modelSees(() => 'plain text')).result).toMatchObject({ output: 'plain text', isError: false });
    expect((await modelSees(() => undefined)).result).toMatchObject({ output: '', isError: false });
    const plain = { a: [1, 'two', null, true], b: { c: -0.5 } };
    expect((await modelSees(() => plain)).result).toMatchObject({ output: JSON.stringify(plain), isError: false });
  });
});

describe('toJsonText', () => {
  const text = (v: unknown) => {
    const r = toJsonText(v);
    return r.ok ? r.text : `not ok: ${r.reason}`;
  };

  it('matches JSON.stringify on plain data, toJSON included', () => {
    const values = [
      1,
      'x',
      null,
      true,
      [1, undefined, 2],
      { a: undefined, b: NaN, c: [Infinity] },
      { toJSON: () => ({ z: 1 }) },
      new String('s'),
      new Number(3),
      new Boolean(false),
    ];
    for (const v of values) expect(text(v)).toBe(JSON.stringify(v));
  });

  it('a shared (non-cyclic) reference is written each time; only a cycle is cut', () => {
    const shared = { n: 1 };
    expect(text({ a: shared, b: shared })).toBe('{"a":{"n":1},"b":{"n":1}}');
    const list: unknown[] = [1];
    list.push(list);
    expect(text(list)).toBe('[1,"[Circular]"]');
  });

  it('an Error: name, message and its own fields', () => {
    const err = Object.assign(new TypeError('bad'), { code: 'E1' });
    expect(text({ err })).toBe('{"err":{"name":"TypeError","message":"bad","code":"E1"}}');
  });

  it('a null-prototype object holding a BigInt', () => {
    expect(text(Object.assign(Object.create(null) as object, { n: 10n }))).toBe('{"n":"10"}');
  });

  it('nesting deeper than 100 levels is cut with a marker instead of exhausting the stack', () => {
    let deep: unknown = 'bottom';
    for (let i = 0; i < 100_000; i++) deep = [deep];
    const out = text(deep);
    expect(out.startsWith('['.repeat(100) + '"[nested too deep]"')).toBe(true);
    expect(out.length).toBe(100 * 2 + '"[nested too deep]"'.length);
  });

  it('not ok for a top-level function, symbol or undefined, with the reason', () => {
    expect(text(() => 1)).toBe('not ok: it is a function ([function]), which has no JSON form');
    expect(text(Symbol.iterator)).toBe('not ok: it is a symbol (Symbol(Symbol.iterator)), which has no JSON form');
    expect(text(undefined)).toBe('not ok: it is undefined, which has no JSON form');
  });
});
