import { catchError, throwError, type Observable } from 'rxjs';
import { ConfigurationError, isModelCallError } from '../../errors.js';
import type { ModelEvent, ModelRequest, OutputSpec } from '../types.js';

/**
 * How `openaiChat` / `openaiResponses` ask for a structured answer (a request with `output`;
 * docs/run-control.md, "Structured output"):
 * - `'native'`: the API's own structured outputs: Chat `response_format: { type: 'json_schema',
 *   json_schema: { name, schema, strict } }`, Responses `text.format: { type: 'json_schema', name,
 *   schema, strict }`;
 * - `'instructions'`: no such field; the schema goes into the system instructions
 *   ({@link outputInstructions}), for servers that do not support it;
 * - `'auto'` (the default): native, and a 400 whose error names `response_format` or `text.format`
 *   is retried once at once with instructions (no `retry_scheduled`, not seen by the breaker); the
 *   provider instance remembers it and asks by instructions from then on.
 */
export type StructuredOutputsMode = 'native' | 'instructions' | 'auto';

const MODES: readonly string[] = ['native', 'instructions', 'auto'];

/** @returns the mode (default `'auto'`). @throws ConfigurationError naming `structuredOutputs`. */
export function checkStructuredOutputs(value: unknown): StructuredOutputsMode {
  if (value === undefined) return 'auto';
  if (typeof value !== 'string' || !MODES.includes(value)) {
    const rule = `must be 'native', 'instructions' or 'auto' (got ${String(value)})`;
    throw new ConfigurationError('structuredOutputs', rule);
  }
  return value as StructuredOutputsMode;
}

/** The system instructions of a request asking by instructions: the agent's, then the schema. */
export function outputInstructions(instructions: string, output: OutputSpec): string {
  const ask =
    'Your final answer must be one JSON value, with no other text and no Markdown code fence, ' +
    `valid against this JSON Schema:\n${JSON.stringify(output.schema)}`;
  return instructions === '' ? ask : `${instructions}\n\n${ask}`;
}

/**
 * True for the refusal `'auto'` falls back on: a `ModelCallError` with status 400, before any stream
 * event, whose message or `param` names `response_format` or `text.format`.
 */
export function refusesStructuredOutputs(err: unknown): boolean {
  if (!isModelCallError(err) || err.status !== 400 || err.streamStarted) return false;
  const cause = err.cause as { param?: unknown } | null | undefined;
  const param = typeof cause === 'object' && cause !== null && typeof cause.param === 'string' ? cause.param : '';
  return /response_format|text\.format/.test(`${err.message} ${param}`);
}

/**
 * The structured-output policy of one provider instance: `send(request)` makes the request as given
 * (an `output` on it means: ask natively). A request without `output` passes as it is; in
 * `'instructions'` mode (or once `'auto'` fell back) `output` is replaced by the schema in the
 * instructions; in `'auto'` a native request refused as {@link refusesStructuredOutputs} is sent
 * again at once by instructions, within the same call.
 */
export function structuredOutputs(
  mode: StructuredOutputsMode,
  send: (request: ModelRequest) => Observable<ModelEvent>,
): (request: ModelRequest) => Observable<ModelEvent> {
  let native = mode !== 'instructions';
  return (request) => {
    const output = request.output;
    if (output === undefined) return send(request);
    if (!native) return send(byInstructions(request, output));
    if (mode === 'native') return send(request);
    return send(request).pipe(
      catchError((err: unknown) => {
        if (!refusesStructuredOutputs(err)) return throwError(() => err);
        native = false;
        return send(byInstructions(request, output));
      }),
    );
  };
}

function byInstructions(request: ModelRequest, output: OutputSpec): ModelRequest {
  const { output: _native, ...rest } = request;
  return { ...rest, instructions: outputInstructions(request.instructions, output) };
}
