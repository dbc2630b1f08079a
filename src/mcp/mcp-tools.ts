import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { checkDurationMs } from '../duration.js';
import type { Tool as McpToolInfo } from '@modelcontextprotocol/sdk/types.js';
import type { JsonSchema } from '../model/types.js';
import { tool, type Tool } from '../tools/tool.js';
import { mcpCall$, type McpCallOptions } from './call.js';
import { providerToolName } from './names.js';

/** Options of {@link mcpTools}. Times in ms. */
export interface McpToolsOptions extends McpCallOptions {
  /** Prepended verbatim (then made provider-valid) to every tool name, e.g. `'fs_'`. Default `''`. */
  readonly prefix?: string;
  /** Only the server tools with these (server-side) names. Default: all. */
  readonly include?: readonly string[];
  /** Only the server tools this predicate keeps (applied after `include`). */
  readonly filter?: (info: McpToolInfo) => boolean;
}

/**
 * Lists an MCP server's tools (`tools/list`, every page) and returns them as
 * loopctl {@link Tool}s: the server's `inputSchema` as raw
 * JSON Schema parameters, names made valid for providers
 * (`^[a-zA-Z0-9_-]{1,64}$`) and unique, with an optional `prefix`. The
 * caller owns the connected `Client` and closes it; `mcpTools` never does.
 *
 * Each call runs on its own AbortController linked to `ctx.signal` for the
 * call only (docs/recovery.md, "Known behaviour of dependencies"). A cancel aborts it, so the SDK sends
 * `notifications/cancelled` with the request id at once (guarantee 10: in-flight requests aborted) and
 * the call is abandoned (checkpoint 8: tool call). Progress notifications become
 * `tool_call_progress` events. `isError` results, server errors, timeouts
 * (`timeoutMs`) and a connection closed mid-call become tool errors for the
 * model; once the transport is closed, later calls fail fast. Text content
 * is joined with newlines; other content is summarised as JSON. Tools that
 * require task-based execution (`execution.taskSupport: 'required'`) are left out.
 * Rejects with the SDK's error if listing fails, and with a `ConfigurationError` naming `options.timeoutMs`
 * or `options.maxTotalTimeoutMs` for a duration that is not a number of ms from 1 to 2³¹−1.
 *
 * @example
 * const client = await connectStdio({ command: 'node', args: ['server.js'] }); // loopctl/node
 * const agent = defineAgent({ name: 'a', instructions: '', model, tools: await mcpTools(client, { prefix: 'srv_' }) });
 * // … run it …
 * await client.close();
 */
export async function mcpTools(
  client: Client,
  options: McpToolsOptions = {},
): Promise<Tool<Record<string, unknown>, string>[]> {
  // The SDK waits with setTimeout: a longer wait than MAX_DURATION_MS would fire at once.
  if (options.timeoutMs !== undefined) checkDurationMs(options.timeoutMs, 'options.timeoutMs', { min: 1 });
  if (options.maxTotalTimeoutMs !== undefined) {
    checkDurationMs(options.maxTotalTimeoutMs, 'options.maxTotalTimeoutMs', { min: 1 });
  }
  const infos: McpToolInfo[] = [];
  let cursor: string | undefined;
  do {
    const page = await client.listTools(cursor === undefined ? {} : { cursor });
    infos.push(...page.tools);
    cursor = page.nextCursor;
  } while (cursor !== undefined);
  const include = options.include ? new Set(options.include) : undefined;
  const taken = new Set<string>();
  return (
    infos
      // Tools that require task-based execution cannot be called with tools/call: left out.
      .filter((info) => info.execution?.taskSupport !== 'required')
      .filter((info) => (include ? include.has(info.name) : true) && (options.filter ? options.filter(info) : true))
      .map((info) => {
        const name = providerToolName(info.name, options.prefix ?? '', taken);
        const target = { toolName: name, mcpName: info.name };
        return tool<string>({
          name,
          description: info.description ?? info.title ?? '',
          parameters: parametersOf(info),
          execute: (args, ctx) => mcpCall$(client, target, args, ctx, options),
        });
      })
  );
}

/** The server's input schema without `$schema`, always an object schema (as providers require). */
function parametersOf(info: McpToolInfo): JsonSchema {
  const { $schema: _drop, ...schema } = info.inputSchema as Record<string, unknown>;
  if (schema['type'] === undefined) schema['type'] = 'object';
  if (schema['type'] === 'object' && schema['properties'] === undefined) schema['properties'] = {};
  return schema;
}
