import { Allow, parse as parsePartialJson } from 'partial-json';
import { z } from 'zod';
import { DEFAULTS } from '../defaults.js';
import { ConfigurationError } from '../errors.js';
import type { JsonSchema, OutputSpec } from '../model/types.js';
import { toJsonSchema } from '../tools/tool.js';
import type { Agent } from './types.js';
import { checkPositiveInt } from './validate.js';

/**
 * Structured output (docs/run-control.md, "Structured output"): the checks of an agent's `output`
 * options, the `OutputSpec` its requests carry, and the check of a final answer against the schema.
 */

/**
 * Checks `agent.output` (a zod schema that converts to JSON Schema) and `agent.outputRetries` (an
 * integer ≥ 0, only with `output`). @returns the repair turns (default `DEFAULTS.outputRetries`).
 * @throws ConfigurationError naming `agent.output` or `agent.outputRetries`.
 */
export function checkOutputOptions(output: unknown, outputRetries: unknown): number {
  if (output === undefined) {
    if (outputRetries !== undefined)
      throw new ConfigurationError('agent.outputRetries', 'is only allowed with agent.output');
    return DEFAULTS.outputRetries;
  }
  if (!(output instanceof z.ZodType)) throw new ConfigurationError('agent.output', 'must be a zod schema');
  try {
    toJsonSchema(output);
  } catch (err) {
    const why = `cannot be sent to a model as JSON Schema: ${(err as Error).message}`;
    throw new ConfigurationError('agent.output', why, { cause: err });
  }
  if (outputRetries === undefined) return DEFAULTS.outputRetries;
  if (outputRetries !== 0) checkPositiveInt(outputRetries, 'agent.outputRetries');
  return outputRetries as number;
}

const specs = new WeakMap<Agent<any, any>, OutputSpec>();

/** The `OutputSpec` of an agent with `output` (computed once per agent: an agent is frozen), else undefined. */
export function outputSpec(agent: Agent<any, any>): OutputSpec | undefined {
  if (agent.output === undefined) return undefined;
  let spec = specs.get(agent);
  if (!spec) {
    const schema = closeObjects(toJsonSchema(agent.output), 0) as JsonSchema;
    spec = Object.freeze({ name: specName(agent.name), schema, strict: isStrictSchema(schema) });
    specs.set(agent, spec);
  }
  return spec;
}

/**
 * The schema of what the model must write (zod's `io: 'input'`), with every object schema that does
 * not say otherwise closed (`additionalProperties: false`): a `z.object` drops unknown keys anyway, and
 * a closed schema is what strict decoding needs. A copy; `schema` is not changed.
 */
function closeObjects(node: unknown, depth: number): unknown {
  if (depth > 64 || node === null || typeof node !== 'object') return node;
  if (Array.isArray(node)) return node.map((n) => closeObjects(n, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(node)) out[key] = closeObjects(value, depth + 1);
  if (out['type'] === 'object' && out['properties'] !== undefined && !('additionalProperties' in out)) {
    out['additionalProperties'] = false;
  }
  return out;
}

/** The agent's name as a schema name (`^[a-zA-Z0-9_-]{1,64}$`): other characters become `_`. */
function specName(name: string): string {
  return name.replace(/[^a-zA-Z0-9_-]/g, '_').slice(0, 64) || 'output';
}

/**
 * True when `schema` keeps OpenAI's strict-mode rules as far as they can be seen: the root is an
 * object, and every object schema in it has `additionalProperties: false` and lists every property
 * in `required` (an optional field breaks it). Anything unsure gives false: strict is then off.
 */
export function isStrictSchema(schema: JsonSchema): boolean {
  return schema['type'] === 'object' && strictBelow(schema, 0);
}

function strictBelow(node: unknown, depth: number): boolean {
  if (depth > 64) return false;
  if (Array.isArray(node)) return node.every((n) => strictBelow(n, depth + 1));
  if (node === null || typeof node !== 'object') return true;
  const s = node as Record<string, unknown>;
  if (s['type'] === 'object' || s['properties'] !== undefined) {
    if (s['additionalProperties'] !== false) return false;
    const keys = Object.keys((s['properties'] as object | undefined) ?? {});
    const required = Array.isArray(s['required']) ? (s['required'] as unknown[]) : [];
    if (!keys.every((k) => required.includes(k))) return false;
  }
  return Object.values(s).every((v) => strictBelow(v, depth + 1));
}

/** What checking a final answer gives: its value, or why it was refused. */
export type OutputCheck =
  { readonly ok: true; readonly value: unknown } | { readonly ok: false; readonly error: string };

/**
 * The JSON text of an answer: trimmed, and without one Markdown code fence around it (models asked
 * by instructions often add one). The raw text stays the run's `output`.
 */
export function jsonText(text: string): string {
  const trimmed = text.trim();
  const fenced = /^```[a-zA-Z]*[ \t]*\n([\s\S]*?)\n?```$/.exec(trimmed);
  return fenced ? fenced[1]!.trim() : trimmed;
}

/**
 * Parses `text` as JSON ({@link jsonText}) and validates it with `schema` (synchronously).
 * @returns the parsed value, or the reason as text: `not valid JSON: …`, or zod's issues (prettified).
 */
export function checkOutput(schema: z.ZodType, text: string): OutputCheck {
  let json: unknown;
  try {
    json = JSON.parse(jsonText(text));
  } catch (err) {
    return { ok: false, error: `the answer is not valid JSON: ${(err as Error).message}` };
  }
  const result = schema.safeParse(json);
  if (result.success) return { ok: true, value: result.data };
  return { ok: false, error: `the answer does not match the schema:\n${z.prettifyError(result.error)}` };
}

/** The `user` message of a repair turn: the validation error, and what to do. */
export function repairMessage(error: string): string {
  return `Your answer was refused: ${error}\nAnswer again with only the JSON value that matches the required schema.`;
}

/** What a partial answer may end in: any JSON value cut short (not NaN or Infinity: they are not JSON). */
const PARTIAL = Allow.STR | Allow.NUM | Allow.ARR | Allow.OBJ | Allow.NULL | Allow.BOOL;

/**
 * The value of an answer so far (`output_delta.value`), parsed with `partial-json`: an unfinished
 * string, number, array or object as far as it goes (`{"a": "He` gives `{ a: 'He' }`). A leading
 * Markdown code fence is skipped. `undefined` while nothing parses (empty, prose, a broken value).
 * Always plain JSON data: the parser's `NaN` and `Infinity` literals (not JSON) are left out.
 */
export function partialValue(text: string): unknown {
  let body = text.trimStart();
  if (body.startsWith('```')) {
    const nl = body.indexOf('\n');
    if (nl < 0) return undefined;
    body = body.slice(nl + 1);
    const end = body.indexOf('```');
    if (end >= 0) body = body.slice(0, end);
  }
  if (body.trim() === '') return undefined;
  // partial-json builds objects by assignment, so a "__proto__" key would set the object's prototype where
  // JSON.parse makes an own key. Where such a key may be (literal or \u-escaped), every string is parsed with a
  // marker in front, and the value is rebuilt with own keys and the markers taken off.
  const guarded = /__proto__|\\u/.test(body);
  let value: unknown;
  try {
    value = parsePartialJson(guarded ? markStrings(body) : body, PARTIAL);
  } catch {
    return undefined;
  }
  if (guarded) value = unmark(value);
  return /NaN|Infinity/.test(body) ? finite(value) : value;
}

/** Put in front of every string of a guarded text (a private-use character), and taken off again by `unmark`. */
const MARK = '\uE000';

/** `text` with {@link MARK} after the opening quote of every string (keys and values), cut-off ones too. */
function markStrings(text: string): string {
  let out = '';
  let from = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (c === '\\') i++;
      else if (c === '"') inString = false;
    } else if (c === '"') {
      out += text.slice(from, i + 1) + MARK;
      from = i + 1;
      inString = true;
    }
  }
  return out + text.slice(from);
}

/** The parse of a marked text with the markers taken off, objects rebuilt with own keys (`__proto__` included). */
function unmark(value: unknown): unknown {
  if (typeof value === 'string') return value.slice(MARK.length);
  if (Array.isArray(value)) return value.map(unmark);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(Object.entries(value).map(([key, v]) => [key.slice(MARK.length), unmark(v)]));
}

/** `value` without its non-finite numbers (dropped from objects and arrays; `undefined` at the top). */
function finite(value: unknown): unknown {
  if (typeof value === 'number') return Number.isFinite(value) ? value : undefined;
  if (Array.isArray(value)) return value.map(finite).filter((v) => v !== undefined);
  if (value === null || typeof value !== 'object') return value;
  // Object.fromEntries makes own keys ("__proto__" too); an assignment would set the prototype.
  const kept = Object.entries(value).map(([key, v]) => [key, finite(v)] as const);
  return Object.fromEntries(kept.filter(([, v]) => v !== undefined));
}
