/**
 * A local OpenAI-compatible model server (Chat Completions, streamed) for the web specs, whose answers can be
 * held: a turn sends its text chunks, then holds its next chunk until the test releases it, the client closes
 * the socket, or a 10 s watchdog fires (then the chunk is sent, so a client that never closed is seen). Each
 * request is recorded: its messages, whether the held chunk went out, when the socket closed.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { chatChunk, SSE_DONE, sseData, toolCallDelta, wireUsage } from '../../support/openai-server.js';

/** One answer: text chunks, then (with `held`) a chunk that waits, then the end; or tool calls. */
export interface Turn {
  readonly chunks?: readonly string[];
  /** Sent only on release (or by the watchdog); the stream ends after it. */
  readonly held?: string;
  readonly toolCalls?: readonly { id: string; name: string; args: unknown }[];
}

export interface ModelRequest {
  /** The request body's messages as `role: content` lines. */
  readonly messages: readonly { role: string; content: unknown }[];
  /** The names of the tools the request offered. */
  readonly tools: readonly string[];
  /** True once the held chunk was written. */
  heldSent: boolean;
  /** True when the watchdog, not a release, sent it. */
  watchdog: boolean;
  /** `performance.now()` when the socket closed before the answer ended (undefined: it ended, or is open). */
  closedEarlyAt: number | undefined;
  /** Resolves when the response is over (ended or closed). */
  readonly done: Promise<void>;
}

export interface HeldModel {
  readonly baseURL: string;
  readonly requests: ModelRequest[];
  /** Answers the next request with `turn` (queued in order). */
  enqueue(...turns: Turn[]): void;
  /** Resolves with request `n` (0-based) once it came. */
  request(n: number): Promise<ModelRequest>;
  /** Sends the held chunk of request `n` and ends its answer. */
  release(n: number): void;
  close(): Promise<void>;
}

export const WATCHDOG_MS = 10_000;

export async function startHeldModel(): Promise<HeldModel> {
  const queue: Turn[] = [];
  const requests: ModelRequest[] = [];
  const releases = new Map<number, () => void>();
  const waiters: (() => void)[] = [];

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    let body = '';
    for await (const chunk of req) body += String(chunk);
    const parsed = JSON.parse(body) as {
      messages: { role: string; content: unknown }[];
      tools?: { function?: { name?: string } }[];
    };
    let finish!: () => void;
    const record: ModelRequest = {
      messages: parsed.messages,
      tools: (parsed.tools ?? []).map((t) => String(t.function?.name)),
      heldSent: false,
      watchdog: false,
      closedEarlyAt: undefined,
      done: new Promise<void>((resolve) => (finish = resolve)),
    };
    const n = requests.push(record) - 1;
    waiters.splice(0).forEach((wake) => wake());
    res.on('close', () => {
      if (!res.writableFinished) record.closedEarlyAt = performance.now();
      finish();
    });
    const turn = queue.shift();
    if (!turn) {
      res.writeHead(500, { 'content-type': 'application/json' });
      return void res.end(JSON.stringify({ error: { message: 'held model: nothing queued', type: 'server_error' } }));
    }
    res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
    res.write(sseData(chatChunk({ role: 'assistant', content: '' })));
    for (const text of turn.chunks ?? []) res.write(sseData(chatChunk({ content: text })));
    if (turn.toolCalls) {
      turn.toolCalls.forEach((c, i) =>
        res.write(sseData(chatChunk({ tool_calls: [toolCallDelta(i, JSON.stringify(c.args), c.id, c.name)] }))),
      );
    }
    if (turn.held !== undefined) {
      const why = await new Promise<'release' | 'close' | 'watchdog'>((resolve) => {
        const timer = setTimeout(() => resolve('watchdog'), WATCHDOG_MS);
        releases.set(n, () => resolve('release'));
        res.on('close', () => resolve('close'));
        record.done.then(() => clearTimeout(timer));
      });
      if (why === 'close' || res.destroyed) return;
      record.watchdog = why === 'watchdog';
      record.heldSent = true;
      res.write(sseData(chatChunk({ content: turn.held })));
    }
    const reason = turn.toolCalls ? 'tool_calls' : 'stop';
    res.write(sseData(chatChunk({}, { finishReason: reason })));
    res.write(sseData(chatChunk({}, { choices: [], usage: wireUsage(20, 5) })));
    res.end(SSE_DONE);
  }

  const server: Server = createServer((req, res) => void handle(req, res).catch(() => res.destroy()));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseURL: `http://127.0.0.1:${port}/v1`,
    requests,
    enqueue: (...turns) => void queue.push(...turns),
    async request(n) {
      while (requests.length <= n) await new Promise<void>((resolve) => waiters.push(resolve));
      return requests[n]!;
    },
    release(n) {
      const release = releases.get(n);
      if (!release) throw new Error(`held model: request ${n} holds nothing`);
      release();
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
