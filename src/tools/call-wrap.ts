import type { TelemetryMcpRequest } from '../engine/telemetry.js';
import type { ToolContext } from './tool.js';

/** Internal: how an MCP request of a tool call is wrapped (the run's telemetry), by the call's context. */
export type McpWrap = <T>(request: TelemetryMcpRequest, fn: () => Promise<T>) => Promise<T>;

const wraps = new WeakMap<ToolContext<any>, McpWrap>();

/** Internal (engine): the run of this tool call watches its MCP requests with `wrap`. */
export function bindMcpWrap(ctx: ToolContext<any>, wrap: McpWrap): void {
  wraps.set(ctx, wrap);
}

/** Internal (mcp): the wrapper of the run this call belongs to, or undefined (no telemetry, or not a run's call). */
export function mcpWrapOf(ctx: ToolContext<any>): McpWrap | undefined {
  return wraps.get(ctx);
}
