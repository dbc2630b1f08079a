import { getEventListeners } from 'node:events';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  CallToolRequestSchema,
  ListToolsRequestSchema,
  type CallToolResult,
  type JSONRPCMessage,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';

/** Test fixture: an in-process MCP server (the SDK's low-level `Server`) over an in-memory transport pair. */

type Handler = (
  args: Record<string, unknown>,
  extra: { signal: AbortSignal; requestId: string | number; progress(p: number, total?: number): Promise<void> },
) => Promise<CallToolResult> | CallToolResult;

export interface FixtureTool {
  readonly info: Tool;
  readonly handler: Handler;
}

/** A server tool with an empty object schema. */
export function fixtureTool(name: string, handler: Handler, extra: Partial<Tool> = {}): FixtureTool {
  return {
    info: { name, description: `the ${name} tool`, inputSchema: { type: 'object', properties: {} }, ...extra },
    handler,
  };
}

export interface Fixture {
  readonly client: Client;
  readonly server: Server;
  /** Every message the client sent, in order. */
  readonly sent: JSONRPCMessage[];
  /** Requests the server saw cancelled (its handler's signal aborted), by request id. */
  readonly serverAborted: (string | number)[];
  /** Makes the client's transport fail every send whose message matches. */
  failSends(match: (m: JSONRPCMessage) => boolean): void;
  cancellations(): { requestId: unknown; reason: unknown }[];
  callIds(): (string | number)[];
  /** The SDK client's pending request bookkeeping (all 0 when nothing is pending). */
  pending(): { responseHandlers: number; progressHandlers: number; timeouts: number };
}

/** Records every outgoing message of `transport` in `sent` (wraps `send`). */
export function recordSends(
  transport: Transport,
  sent: JSONRPCMessage[],
  shouldFail: () => ((m: JSONRPCMessage) => boolean) | undefined = () => undefined,
): void {
  const send = transport.send.bind(transport);
  transport.send = async (message, options) => {
    sent.push(message);
    if (shouldFail()?.(message)) throw new Error('simulated transport failure');
    return send(message, options);
  };
}

/** The SDK client's internal maps of pending requests (guarantee 9: nothing left behind, not even after a call). */
export function pendingOf(client: Client): { responseHandlers: number; progressHandlers: number; timeouts: number } {
  const c = client as unknown as {
    _responseHandlers: Map<unknown, unknown>;
    _progressHandlers: Map<unknown, unknown>;
    _timeoutInfo: Map<unknown, unknown>;
  };
  return {
    responseHandlers: c._responseHandlers.size,
    progressHandlers: c._progressHandlers.size,
    timeouts: c._timeoutInfo.size,
  };
}

export const abortListeners = (signal: AbortSignal): number => getEventListeners(signal, 'abort').length;

export function cancellationsIn(sent: readonly JSONRPCMessage[]): { requestId: unknown; reason: unknown }[] {
  return sent
    .filter((m) => 'method' in m && m.method === 'notifications/cancelled')
    .map((m) => (m as unknown as { params: { requestId: unknown; reason: unknown } }).params);
}

/** Starts the server with `tools` (listed `pageSize` per page) and connects a client to it. */
export async function startFixture(tools: readonly FixtureTool[], pageSize = 100): Promise<Fixture> {
  const server = new Server({ name: 'fixture', version: '1.0.0' }, { capabilities: { tools: {} } });
  const serverAborted: (string | number)[] = [];
  server.setRequestHandler(ListToolsRequestSchema, (req) => {
    const start = Number(req.params?.cursor ?? 0);
    const page = tools.slice(start, start + pageSize).map((t) => t.info);
    return start + pageSize < tools.length ? { tools: page, nextCursor: String(start + pageSize) } : { tools: page };
  });
  server.setRequestHandler(CallToolRequestSchema, (req, extra) => {
    const t = tools.find((x) => x.info.name === req.params.name);
    if (!t) throw new Error(`no tool ${req.params.name}`);
    extra.signal.addEventListener('abort', () => serverAborted.push(extra.requestId), { once: true });
    const token = req.params._meta?.progressToken;
    const progress = async (p: number, total?: number): Promise<void> => {
      if (token !== undefined)
        await extra.sendNotification({
          method: 'notifications/progress',
          params: { progressToken: token, progress: p, ...(total !== undefined ? { total } : {}) },
        });
    };
    return t.handler(req.params.arguments ?? {}, { signal: extra.signal, requestId: extra.requestId, progress });
  });
  const [clientTransport, serverTransport] = InMemoryTransport.createLinkedPair();
  const sent: JSONRPCMessage[] = [];
  let failing: ((m: JSONRPCMessage) => boolean) | undefined;
  recordSends(clientTransport, sent, () => failing);
  await server.connect(serverTransport);
  const client = new Client({ name: 'test', version: '1.0.0' });
  await client.connect(clientTransport);
  return {
    client,
    server,
    sent,
    serverAborted,
    failSends: (match) => (failing = match),
    cancellations: () => cancellationsIn(sent),
    callIds: () =>
      sent
        .filter((m) => 'method' in m && m.method === 'tools/call' && 'id' in m)
        .map((m) => (m as { id: string | number }).id),
    pending: () => pendingOf(client),
  };
}

/** Resolves after pending I/O callbacks and microtasks (no timing assertion). */
export const settle = (): Promise<void> => new Promise((r) => setImmediate(r));
