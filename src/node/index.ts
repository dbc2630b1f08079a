/**
 * The `loopctl/node` entry (Node.js only): the atomic file write that the
 * tool author's contract asks for (docs/cancellation.md), and ready-made workspace
 * tools (filesystem tools confined to a folder; a shell tool, not sandboxed).
 */
export { atomicWriteFile, type AtomicWriteOptions } from './atomic-write.js';
export { fsTools, type FsToolsOptions } from './fs-tools.js';
export { searchPattern } from './fs-search.js';
export { BinaryFileError } from './read-text.js';
export { NotRegularFileError } from './confined.js';
export { runShell, shellTool, type ShellToolOptions } from './shell-tool.js';
export { isPathOutsideRootError, PathOutsideRootError, resolveInside } from './workspace.js';
export {
  connectStdio,
  connectStreamableHttp,
  type StdioServerOptions,
  type StreamableHttpOptions,
  type McpConnectOptions,
  type McpClientInfo,
} from './mcp.js';
