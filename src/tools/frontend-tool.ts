import { z } from 'zod';
import { ConfigurationError } from '../errors.js';
import type { JsonSchema } from '../model/types.js';
import type { Tool } from './tool.js';

/**
 * A tool the client runs (docs/run-control.md, "Front-end tools"): declared for one run with the
 * `frontendTools` run option (over AG-UI: `RunAgentInput.tools`). The model is offered it like the agent's
 * own tools; a call to it is never run by loopctl: it suspends the run, and the client answers it with its
 * result when it resumes (`resume(agent, suspended, { [callId]: { result } })`).
 * - `name`: as a tool's (`^[a-zA-Z0-9_-]{1,64}$`), unique, and no name of the agent's own tools.
 * - `description`: what the model reads.
 * - `parameters`: a JSON Schema object of its arguments (optional; default: an object of any properties).
 *   Arguments are only JSON-parsed and checked to be an object: the client validates them.
 */
export interface FrontendTool {
  readonly name: string;
  readonly description: string;
  readonly parameters?: JsonSchema;
}

/**
 * The answer to a front-end tool's call, given to `resume` as its decision: the text the model reads. Strict: an
 * answer with any other key (`{ result, approve: false }`) is no answer (`resume` refuses it, naming
 * `decisions.<callId>`), so a rejection is never read as a result.
 */
export const FrontendToolResultSchema = z.object({ result: z.string() }).strict().readonly();
/** A rejection of a front-end tool's call: `{ approve: false, reason }` and nothing else (no `result`). */
export const FrontendToolRejectionSchema = z
  .object({ approve: z.literal(false), reason: z.string() })
  .strict()
  .readonly();
/** See {@link FrontendToolResultSchema}. */
export type FrontendToolResult = z.infer<typeof FrontendToolResultSchema>;

const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;
const EMPTY_OBJECT: JsonSchema = Object.freeze({ type: 'object', properties: {} });
/** Marks the tools made from {@link FrontendTool}s, so the engine knows a call to one suspends the run. */
const FRONTEND = Symbol('loopctl.frontendTool');

/**
 * Checks a `frontendTools` value (an array of {@link FrontendTool}); `field` names it in the error
 * (`options.frontendTools`, or `tools` over HTTP). Throws `ConfigurationError` naming the bad entry's field.
 */
export function checkFrontendTools(value: unknown, field: string): void {
  if (!Array.isArray(value))
    throw new ConfigurationError(field, 'must be an array of { name, description, parameters? }');
  const names = new Set<string>();
  value.forEach((t: unknown, i) => {
    const at = `${field}[${i}]`;
    if (t === null || typeof t !== 'object' || Array.isArray(t)) throw new ConfigurationError(at, 'must be an object');
    const { name, description, parameters } = t as Record<string, unknown>;
    if (typeof name !== 'string' || !TOOL_NAME.test(name))
      throw new ConfigurationError(`${at}.name`, `must match ${TOOL_NAME} (got ${JSON.stringify(name)})`);
    if (names.has(name)) throw new ConfigurationError(`${at}.name`, `names tool "${name}" twice`);
    names.add(name);
    if (typeof description !== 'string') throw new ConfigurationError(`${at}.description`, 'must be a string');
    if (
      parameters !== undefined &&
      (parameters === null || typeof parameters !== 'object' || Array.isArray(parameters))
    )
      throw new ConfigurationError(`${at}.parameters`, 'must be a JSON Schema object');
  });
}

/**
 * The agent's tools followed by the run's front-end tools (checked with {@link checkFrontendTools} before),
 * each as a {@link Tool} the engine never executes. A front-end tool named like one of the agent's tools is
 * a `ConfigurationError` naming `options.frontendTools[i].name`.
 */
export function withFrontendTools(tools: readonly Tool[], frontend: readonly FrontendTool[]): readonly Tool[] {
  const own = new Set(tools.map((t) => t.name));
  const added = frontend.map((f, i) => {
    if (own.has(f.name)) {
      throw new ConfigurationError(`options.frontendTools[${i}].name`, `"${f.name}" is a tool of the agent already`);
    }
    return frontendTool(f.name, f.description, f.parameters ?? EMPTY_OBJECT);
  });
  return Object.freeze([...tools, ...added]);
}

/**
 * A front-end tool as a {@link Tool}: `execute` returns `result` when given (a resumed run's answered call),
 * else throws (it is never called: a call to a front-end tool suspends the run).
 */
export function frontendTool(name: string, description: string, parameters: JsonSchema, result?: string): Tool {
  const execute = () => {
    if (result !== undefined) return result;
    throw new Error(`front-end tool ${name} runs in the client`);
  };
  return Object.freeze({ name, description, parameters, execute, [FRONTEND]: true });
}

/** True for a tool made from a {@link FrontendTool} (a call to it suspends the run). */
export function isFrontendTool(tool: Tool): boolean {
  return (tool as { [FRONTEND]?: unknown })[FRONTEND] === true;
}
