import { describeValue, toJsonText } from '../describe.js';

/**
 * `--json` output: one value (a `RunEvent`) as one NDJSON line, through the
 * library's total serialiser (`toJsonText`: cycles marked, BigInt as text,
 * Map/Set as entries, unreadable properties marked; "foreign values are never
 * trusted"). Never throws: a value with no JSON form at all is written as its
 * description (a JSON string).
 */
export function toJsonLine(value: unknown): string {
  const json = toJsonText(value);
  return `${json.ok ? json.text : JSON.stringify(describeValue(value))}\n`;
}

/** `value` as plain JSON data by the same rules (the parsed form of {@link toJsonLine}); never throws. */
export function toJsonData(value: unknown): unknown {
  return JSON.parse(toJsonLine(value)) as unknown;
}
