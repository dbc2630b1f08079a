// The SDK's client and transports (with the JSON Schema validator they load, Ajv) are imported when a connect helper
// is called, not with `loopctl/node`: most programs (the CLI among them) never connect to an MCP server, and loading
// them costs a quarter of a second of CPU at each start.
import type { Client, ClientOptions } from '@modelcontextprotocol/sdk/client/index.js';
import type { StdioServerParameters } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { StreamableHTTPClientTransportOptions } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';

/** The identity a loopctl MCP client announces (`initialize`'s `clientInfo`). */
export interface McpClientInfo {
  readonly name: string;
  readonly version: string;
}

/** Options shared by the MCP connect helpers. */
export interface McpConnectOptions {
  /** Default `{ name: 'loopctl', version: '0.1.0' }`. */
  readonly clientInfo?: McpClientInfo;
  /** Passed to the SDK's `Client` (capabilities, …). */
  readonly clientOptions?: ClientOptions;
}

const DEFAULT_INFO: McpClientInfo = { name: 'loopctl', version: '0.1.0' };

/** Connects a new SDK `Client` over `transport`; on failure closes the transport and rethrows. */
async function connect(transport: Transport, options: McpConnectOptions): Promise<Client> {
  const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
  const client = new Client({ ...(options.clientInfo ?? DEFAULT_INFO) }, options.clientOptions);
  try {
    await client.connect(transport);
  } catch (err) {
    await transport.close().catch(() => {});
    throw err;
  }
  return client;
}

/**
 * What {@link connectStdio} spawns. `env` is merged over the SDK's safe default environment. `stderr` defaults to
 * `'inherit'`.
 */
export interface StdioServerOptions extends McpConnectOptions {
  readonly command: string;
  readonly args?: readonly string[];
  readonly env?: Readonly<Record<string, string>>;
  readonly cwd?: string;
  readonly stderr?: StdioServerParameters['stderr'];
}

/**
 * Spawns an MCP server as a child process and connects to it over stdio;
 * resolves with the connected SDK `Client` (rejects with the SDK's error,
 * after killing the child, if the handshake fails). The caller owns the
 * client: `client.close()` ends the child process. Pass it to `mcpTools`.
 *
 * @example
 * const client = await connectStdio({ command: 'npx', args: ['-y', '@modelcontextprotocol/server-everything'] });
 * const tools = await mcpTools(client);
 */
export async function connectStdio(options: StdioServerOptions): Promise<Client> {
  const { StdioClientTransport } = await import('@modelcontextprotocol/sdk/client/stdio.js');
  const transport = new StdioClientTransport({
    command: options.command,
    args: [...(options.args ?? [])],
    ...(options.env ? { env: { ...options.env } } : {}),
    ...(options.cwd !== undefined ? { cwd: options.cwd } : {}),
    ...(options.stderr !== undefined ? { stderr: options.stderr } : {}),
  });
  return connect(transport, options);
}

/**
 * Options of {@link connectStreamableHttp}: the SDK transport's (`requestInit` for headers, `authProvider`, …) and the
 * client's.
 */
export interface StreamableHttpOptions extends McpConnectOptions {
  readonly transport?: StreamableHTTPClientTransportOptions;
}

/**
 * Connects to an MCP server over Streamable HTTP at `url` (e.g.
 * `http://127.0.0.1:3001/mcp`); resolves with the connected SDK `Client`,
 * rejects with the SDK's error. The caller owns it and calls `close()`.
 *
 * @example
 * const client = await connectStreamableHttp('http://127.0.0.1:3001/mcp');
 */
export async function connectStreamableHttp(url: string | URL, options: StreamableHttpOptions = {}): Promise<Client> {
  const { StreamableHTTPClientTransport } = await import('@modelcontextprotocol/sdk/client/streamableHttp.js');
  return connect(new StreamableHTTPClientTransport(new URL(url), options.transport), options);
}
