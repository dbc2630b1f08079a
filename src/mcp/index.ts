/** MCP tools (transport-agnostic): an MCP server's tools as loopctl tools. See {@link mcpTools}. */
export { mcpTools, type McpToolsOptions } from './mcp-tools.js';
export { mcpCall$, type McpCallOptions, type McpCallTarget } from './call.js';
export { providerToolName } from './names.js';
export { resultText } from './content.js';
