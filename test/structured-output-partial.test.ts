/**
 * `partialValue` (the `output_delta` parser, docs/run-control.md "Structured output"), over random JSON:
 * every prefix of an answer parses without throwing to plain JSON data, the whole answer gives its value,
 * and an object's partial value never has a key the whole one lacks.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { checkOutput, jsonText, partialValue } from '../src/engine/output.js';
import { z } from 'zod';

/**
 * The same random cases every run (FC_SEED picks others): the cost of a case grows with the square of its text's
 * length (every prefix is parsed), so a fresh draw made the spec's duration, and whether it fit its timeout on a
 * loaded machine, a matter of chance.
 */
const seed = Number(process.env.FC_SEED ?? 1);

const prefixes = (text: string): string[] => Array.from({ length: text.length + 1 }, (_, i) => text.slice(0, i));
const isPlainJson = (value: unknown): boolean => {
  if (value === undefined) return true;
  return JSON.stringify(JSON.parse(JSON.stringify(value))) === JSON.stringify(value);
};

describe('partialValue', () => {
  it('every prefix parses to plain JSON data (or undefined); the whole text gives the value', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 3 }), fc.constantFrom(undefined, 2), (value, indent) => {
        const text = JSON.stringify(value, null, indent);
        // One expect per case, not per prefix: the prefixes are many, and the cheap check keeps the spec quick.
        expect(prefixes(text).filter((prefix) => !isPlainJson(partialValue(prefix)))).toEqual([]);
        expect(partialValue(text)).toEqual(JSON.parse(text));
      }),
      { numRuns: 200, seed },
    );
  });

  it("an object's partial value has only keys of the whole object", () => {
    const objects = fc.dictionary(fc.string({ maxLength: 6 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 5 });
    fc.assert(
      fc.property(objects, (value) => {
        const text = JSON.stringify(value);
        const keys = new Set(Object.keys(value));
        const wrong: { prefix: string; partial: unknown }[] = [];
        for (const prefix of prefixes(text)) {
          const partial = partialValue(prefix);
          if (partial === undefined) continue;
          const ok = typeof partial === 'object' && partial !== null && Object.keys(partial).every((k) => keys.has(k));
          if (!ok) wrong.push({ prefix, partial });
        }
        // Every prefix's value is an object with only keys of the whole object.
        expect(wrong).toEqual([]);
      }),
      { numRuns: 100, seed },
    );
  });

  it('a "__proto__" key is an own key, as JSON.parse makes it, never the prototype (also \\u-escaped)', () => {
    const whole = JSON.parse('{"__proto__": [1], "a": {"__proto__": {"b": 2}}}');
    expect(Object.getPrototypeOf(partialValue('{"__proto__": [1], "a": {"__proto__": {"b": 2}}}'))).toBe(
      Object.prototype,
    );
    expect(partialValue('{"__proto__": [1], "a": {"__proto__": {"b": 2}}}')).toStrictEqual(whole);
    expect(partialValue('{"__proto__": [1], "a": {"__proto__": {"b"')).toStrictEqual(
      JSON.parse('{"__proto__": [1], "a": {"__proto__": {}}}'),
    );
    expect(Object.keys(partialValue('{"\\u005f_proto__": [1, 2') as object)).toEqual(['__proto__']);
    expect(partialValue('{"\\u005f_proto__": NaN, "c": ["__proto__", "\\ue000x"')).toStrictEqual({
      c: ['__proto__', '\ue000x'],
    });
  });

  it('a code fence is skipped, open or closed; prose gives undefined', () => {
    expect(partialValue('```json\n{"a": [1, 2')).toEqual({ a: [1, 2] });
    expect(partialValue('```\n{"a": 1}\n```')).toEqual({ a: 1 });
    expect(partialValue('```json')).toBeUndefined();
    expect(partialValue('  ')).toBeUndefined();
    expect(partialValue('The answer is {"a": 1}')).toBeUndefined();
    expect(partialValue('{"a": NaN, "b": [1, Infinity, -Infinity], "c": "NaN"')).toEqual({ b: [1], c: 'NaN' });
    expect(partialValue('-Infinity')).toBeUndefined();
  });

  it('jsonText and checkOutput: one fence removed; the reason says what was wrong', () => {
    expect(jsonText(' ```json\n{"a": 1}\n``` ')).toBe('{"a": 1}');
    expect(jsonText('{"a": "```"}')).toBe('{"a": "```"}');
    const schema = z.object({ a: z.number() });
    expect(checkOutput(schema, '```json\n{"a": 1}\n```')).toEqual({ ok: true, value: { a: 1 } });
    const notJson = checkOutput(schema, '{"a": 1');
    expect(notJson.ok === false && notJson.error).toMatch(/^the answer is not valid JSON: /);
    const wrong = checkOutput(schema, '{"a": "1"}');
    expect(wrong.ok === false && wrong.error).toBe(
      'the answer does not match the schema:\n✖ Invalid input: expected number, received string\n  → at a',
    );
  });
});
