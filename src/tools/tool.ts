import type { Observable } from 'rxjs';
import { deepFreeze } from '../deep-freeze.js';
import { checkDurationMs } from '../duration.js';
import { z } from 'zod';
import type { CancelSignal } from '../cancel/cancel-signal.js';
import { ConfigurationError } from '../errors.js';
import type { Mailbox } from '../mailbox/mailbox.js';
import type { JsonSchema } from '../model/types.js';

/**
 * What a tool's `execute` receives besides its arguments (see the tool author's
 * contract in docs/cancellation.md).
 * - `signal` aborts when the run is cancelled (reason: the cancel reason) or
 *   the per-tool timeout expires (reason: a `TimeoutError`).
 * - `cancel` is a token the run owns: firing it cancels this run only.
 * - `callId` is the provider's tool call id: a stable idempotency key.
 * - `reportProgress(progress)` emits a `tool_call_progress` event.
 * - `resumed` is set for a call of a suspended batch that `resume()` runs (docs/run-control.md,
 *   "Exactly once across resumes"): `{ suspensionId }`, the suspension it continues; absent for every
 *   other call. Such a call was recorded as started before `execute` was called, and no later resume
 *   of that suspension runs it again; a tool with effects outside the process can key them on
 *   `(resumed.suspensionId, callId)`.
 * - `attempt` is 1, or 2 when a continued run (`resumeRun`, docs/sessions.md, "No tool runs twice") runs
 *   again a call of an `idempotent` tool that had started in the process that died (same `callId`); each
 *   further continue that runs it again counts one more (3, 4, …).
 */
export interface ToolContext<C = unknown> {
  readonly signal: AbortSignal;
  readonly cancel: CancelSignal;
  readonly mailbox: Mailbox;
  readonly runId: string;
  readonly callId: string;
  readonly turn: number;
  readonly context: C;
  readonly resumed?: { readonly suspensionId: string };
  readonly attempt: number;
  reportProgress(progress: unknown): void;
}

/**
 * What a tool's `needsApproval` function receives: the call's context before it runs (no `signal`,
 * no `reportProgress` and no `resumed` yet: the call has not started).
 */
export type ApprovalContext<C = unknown> = Omit<ToolContext<C>, 'signal' | 'reportProgress' | 'resumed' | 'attempt'>;

/**
 * Whether a call waits for a decision before it starts ("approvals", docs/run-control.md): `true`
 * always, `false` never, or a function of the parsed arguments (a Promise is awaited; a function
 * that throws or rejects refuses the call with a tool error; any answer but `false` asks: it fails
 * closed).
 */
export type NeedsApproval<A = any, C = any> =
  boolean | ((args: A, ctx: ApprovalContext<C>) => boolean | PromiseLike<boolean>);

/**
 * A tool may return a value, a Promise or an Observable (its last value is the result; an empty one is a tool error).
 */
export type ToolReturn<R> = R | PromiseLike<R> | Observable<R>;

/**
 * A tool the model can call. `parameters` is a zod schema (arguments are
 * parsed and validated) or a raw JSON Schema (MCP tools; arguments are only
 * JSON-parsed and checked to be an object). Results that are not strings are
 * sent to the model as JSON. `timeoutMs` (ms, optional) is the per-call
 * deadline: on expiry `ctx.signal` aborts with a `TimeoutError` and the model
 * gets a tool error (docs/recovery.md, "Deadlines"), never a cancel. `needsApproval` (optional,
 * default `false`) makes a call wait for `approve()` / `reject()` first ({@link NeedsApproval}).
 * `idempotent` (optional, default `false`): running a call twice with the same `callId` has the effect of
 * running it once (docs/sessions.md, "No tool runs twice"): a continued run runs again a call of it that
 * had started in the process that died (`ctx.attempt` 2, 3 after a second such continue, …); any other tool's
 * such call is not run again (the model reads that its effects are unknown).
 */
export interface Tool<A = any, R = unknown, C = any> {
  readonly name: string;
  readonly description: string;
  readonly parameters: z.ZodType<A> | JsonSchema;
  readonly timeoutMs?: number;
  readonly needsApproval?: NeedsApproval<A, C>;
  readonly idempotent?: boolean;
  execute(args: A, ctx: ToolContext<C>): ToolReturn<R>;
}

const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;

/**
 * Defines a tool; the `execute` argument type is inferred from a zod schema.
 * Throws `ConfigurationError` naming the field for an invalid name (OpenAI's
 * `^[a-zA-Z0-9_-]{1,64}$`), a missing description, parameters or execute, or
 * parameters that JSON Schema cannot express (e.g. `z.date()`), a `needsApproval` that is neither
 * a boolean nor a function, or an `idempotent` that is not a boolean.
 *
 * @example
 * const add = tool({
 *   name: 'add', description: 'Adds two numbers',
 *   parameters: z.object({ a: z.number(), b: z.number() }),
 *   execute: ({ a, b }) => a + b,
 * });
 */
export function tool<S extends z.ZodType, R, C = unknown>(definition: {
  name: string;
  description: string;
  parameters: S;
  timeoutMs?: number;
  needsApproval?: NeedsApproval<z.output<S>, C>;
  idempotent?: boolean;
  execute(args: z.output<S>, ctx: ToolContext<C>): ToolReturn<R>;
}): Tool<z.output<S>, R, C>;
export function tool<R, C = unknown>(definition: {
  name: string;
  description: string;
  parameters: JsonSchema;
  timeoutMs?: number;
  needsApproval?: NeedsApproval<Record<string, unknown>, C>;
  idempotent?: boolean;
  execute(args: Record<string, unknown>, ctx: ToolContext<C>): ToolReturn<R>;
}): Tool<Record<string, unknown>, R, C>;
export function tool(definition: Tool): Tool {
  validateTool(definition, 'tool');
  return Object.freeze({ ...definition });
}

/** Checks a tool definition; `path` prefixes the field named in the error. */
export function validateTool(t: Tool, path: string): void {
  if (t === null || typeof t !== 'object') throw new ConfigurationError(path, 'must be a tool object');
  if (typeof t.name !== 'string' || !TOOL_NAME.test(t.name))
    throw new ConfigurationError(`${path}.name`, `must match ${TOOL_NAME} (got ${JSON.stringify(t.name)})`);
  if (typeof t.description !== 'string') throw new ConfigurationError(`${path}.description`, 'must be a string');
  if (t.parameters === null || typeof t.parameters !== 'object')
    throw new ConfigurationError(`${path}.parameters`, 'must be a zod schema or a JSON Schema object');
  if (typeof t.execute !== 'function') throw new ConfigurationError(`${path}.execute`, 'must be a function');
  try {
    toJsonSchema(t.parameters);
  } catch (err) {
    throw new ConfigurationError(
      `${path}.parameters`,
      `cannot be sent to a model as JSON Schema: ${(err as Error).message}`,
      { cause: err },
    );
  }
  if (t.timeoutMs !== undefined) checkDurationMs(t.timeoutMs, `${path}.timeoutMs`, { min: 1 });
  const needs = t.needsApproval;
  if (needs !== undefined && typeof needs !== 'boolean' && typeof needs !== 'function')
    throw new ConfigurationError(`${path}.needsApproval`, 'must be a boolean or a function (args, ctx) => boolean');
  if (t.idempotent !== undefined && typeof t.idempotent !== 'boolean')
    throw new ConfigurationError(`${path}.idempotent`, `must be a boolean (got ${typeof t.idempotent})`);
}

/** @returns true when `parameters` is a zod schema rather than a raw JSON Schema. */
export function isZodSchema(parameters: unknown): parameters is z.ZodType {
  return parameters instanceof z.ZodType;
}

const converted = new WeakMap<z.ZodType, JsonSchema>();

/**
 * The JSON Schema sent on the wire for a tool's parameters (or an agent's `output`): a raw JSON Schema as it is, a
 * zod schema converted once per schema object (zod schemas are immutable; `tool()` checks the conversion and every
 * agent that lists the tool sends it, so an agent defined per request converts nothing), deeply frozen: readers copy
 * before they change it. @throws what `z.toJSONSchema` throws for a schema JSON Schema cannot express.
 */
export function toJsonSchema(parameters: z.ZodType | JsonSchema): JsonSchema {
  if (!isZodSchema(parameters)) return parameters;
  let schema = converted.get(parameters);
  if (!schema) {
    const { $schema: _drop, ...json } = z.toJSONSchema(parameters, { io: 'input' }) as Record<string, unknown>;
    schema = deepFreeze(json);
    converted.set(parameters, schema);
  }
  return schema;
}
