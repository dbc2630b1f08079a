import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  ChunkBuilder,
  completion,
  countTokens,
  OFFLINE_MODEL,
  replyText,
  wordChunks,
  type Reply,
  type WireUsage,
} from './chunks.js';
import { isSummaryRequest, offlineSummary } from './compaction.js';
import { readConversation } from './conversation.js';
import { plan } from './planner.js';

/** Options of {@link startOfflineModel}. */
export interface OfflineModelOptions {
  /** Pause between two streamed answer chunks, in ms (default 15; 0 = none). */
  readonly delayMs?: number;
}

/** A running offline model server. */
export interface OfflineModel {
  /** `http://127.0.0.1:<port>/v1`, for `openaiChat({ baseURL })`. */
  readonly baseURL: string;
  /** The model name it answers as. */
  readonly model: string;
  /** Stops listening and closes every connection. */
  close(): Promise<void>;
}

/**
 * Starts the offline model: an OpenAI-compatible Chat Completions endpoint
 * (`POST /v1/chat/completions`, `GET /v1/models`) on 127.0.0.1, port 0, in
 * this process. Each request is answered by the rule-based {@link plan}: a
 * tool call, or a final answer streamed word by word `delayMs` apart, with
 * `finish_reason`, a usage chunk when `stream_options.include_usage` is set,
 * and `[DONE]`. Non-streamed requests get one `chat.completion`. When the
 * client hangs up mid-stream, writing stops at once. The server is unref'd:
 * it never keeps Node alive on its own.
 */
export async function startOfflineModel(options: OfflineModelOptions = {}): Promise<OfflineModel> {
  const delayMs = options.delayMs ?? 15;
  const server = createServer((req, res) => {
    handle(req, res, delayMs).catch((error: unknown) => {
      if (res.headersSent) return void res.destroy();
      sendError(res, 500, `offline model: ${error instanceof Error ? error.message : String(error)}`);
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  server.unref();
  const { port } = server.address() as AddressInfo;
  return {
    baseURL: `http://127.0.0.1:${port}/v1`,
    model: OFFLINE_MODEL,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

async function handle(req: IncomingMessage, res: ServerResponse, delayMs: number): Promise<void> {
  const path = (req.url ?? '').split('?')[0];
  if (req.method === 'GET' && path === '/v1/models') {
    return json(res, 200, {
      object: 'list',
      data: [{ id: OFFLINE_MODEL, object: 'model', created: 0, owned_by: 'loopctl' }],
    });
  }
  if (req.method !== 'POST' || path !== '/v1/chat/completions') {
    return sendError(
      res,
      404,
      `offline model: no route ${req.method} ${path}; it serves POST /v1/chat/completions only`,
    );
  }
  let body: Record<string, unknown>;
  let reply: Reply;
  try {
    body = JSON.parse(await readBody(req)) as Record<string, unknown>;
    // A compaction's summary request (docs/long-runs.md): an extractive summary, so the path runs without a key.
    reply = isSummaryRequest(body) ? { kind: 'text', text: offlineSummary(body) } : plan(readConversation(body));
  } catch (error) {
    return sendError(res, 400, `offline model: bad request: ${error instanceof Error ? error.message : String(error)}`);
  }
  const id = `chatcmpl-offline-${randomUUID()}`;
  const prompt = countTokens(JSON.stringify(body['messages'] ?? ''));
  const out = countTokens(replyText(reply));
  const usage: WireUsage = { prompt_tokens: prompt, completion_tokens: out, total_tokens: prompt + out };
  if (body['stream'] !== true) return json(res, 200, completion(id, reply, usage));
  const streamOptions = body['stream_options'] as { include_usage?: unknown } | undefined;
  await stream(res, id, reply, streamOptions?.include_usage === true ? usage : undefined, delayMs);
}

async function stream(
  res: ServerResponse,
  id: string,
  reply: Reply,
  usage: WireUsage | undefined,
  delayMs: number,
): Promise<void> {
  res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
  res.flushHeaders();
  const gone = () => res.destroyed || res.writableEnded;
  const send = (payload: unknown) => !gone() && res.write(`data: ${JSON.stringify(payload)}\n\n`);
  const chunks = new ChunkBuilder(id);
  send(chunks.role());
  if (reply.kind === 'tool') {
    for (const chunk of chunks.toolCall(0, `call_${randomUUID().slice(0, 8)}`, reply.name, JSON.stringify(reply.args)))
      send(chunk);
    send(chunks.finish('tool_calls'));
  } else {
    for (const word of wordChunks(reply.text)) {
      if (delayMs > 0) await pause(res, delayMs);
      if (gone()) return;
      send(chunks.text(word));
    }
    send(chunks.finish('stop'));
  }
  if (usage) send(chunks.usage(usage));
  if (!gone()) res.end('data: [DONE]\n\n');
}

/** Waits `ms`, or less when the response closes first (the timer is cleared). */
function pause(res: ServerResponse, ms: number): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      res.off('close', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    res.once('close', done);
  });
}

async function readBody(req: IncomingMessage): Promise<string> {
  const parts: Buffer[] = [];
  for await (const part of req) parts.push(part as Buffer);
  return Buffer.concat(parts).toString('utf8');
}

function json(res: ServerResponse, status: number, payload: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(payload));
}

function sendError(res: ServerResponse, status: number, message: string): void {
  json(res, status, {
    error: { message, type: status === 404 ? 'not_found_error' : 'invalid_request_error', param: null, code: null },
  });
}
