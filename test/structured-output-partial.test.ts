/**
 * `partialValue` (the `output_delta` parser, docs/run-control.md "Structured output"), over random JSON:
 * every prefix of an answer parses without throwing to plain JSON data, the whole answer gives its value,
 * and an object's partial value never has a key the whole one lacks.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { checkOutput, jsonText, partialValue } from '../src/engine/output.js';
import { z } from 'zod';

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
        for (const prefix of prefixes(text)) expect(isPlainJson(partialValue(prefix))).toBe(true);
        expect(partialValue(text)).toEqual(JSON.parse(text));
      }),
      { numRuns: 200 },
    );
  });

  it("an object's partial value has only keys of the whole object", () => {
    const objects = fc.dictionary(fc.string({ maxLength: 6 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 5 });
    fc.assert(
      fc.property(objects, (value) => {
        const text = JSON.stringify(value);
        for (const prefix of prefixes(text)) {
          const partial = partialValue(prefix);
          if (partial === undefined) continue;
          expect(typeof partial).toBe('object');
          for (const key of Object.keys(partial as object)) expect(Object.keys(value)).toContain(key);
        }
      }),
      { numRuns: 200 },
    );
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
