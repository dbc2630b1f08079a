/**
 * The local HTTP server of `providerContract`: node:http on 127.0.0.1, port 0, speaking one provider's
 * wire format through its {@link WireKit}. It validates every request as the real API would, answers
 * from a queue of scripted replies, and records when each response closed and whether it had finished,
 * so a test can see the client hang up.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ScriptedAnswer, WireKit, WireReply, WireRequest } from './provider-kit.js';

/**
 * What the server answers to one request:
 * - `answer`: the kit's encoding of it, streamed (`stream`) or whole (`json`) as the request's route says;
 * - `frames`: these frames with event-stream headers, then `end` the response, `cut` the socket, or `hold`
 *   it open and silent until the client closes;
 * - `reply`: a whole reply (an error);
 * - `stall`: nothing until the client closes, `before_headers` or `after_headers` (the route's headers
 *   flushed: event-stream for `stream`, JSON for `json`).
 */
export type WireScript =
  | { readonly answer: ScriptedAnswer }
  | { readonly frames: readonly string[]; readonly then: 'end' | 'cut' | 'hold' }
  | { readonly reply: WireReply }
  | { readonly stall: 'before_headers' | 'after_headers' };

/** One request the server received, updated in place as its response closes. */
export interface WireRecord extends WireRequest {
  /** The kit's route of it (`undefined`: a path the API does not serve). */
  readonly route: 'stream' | 'json' | undefined;
  /** Why it was refused (404 for an unknown route, 400 from `validateRequest`), or undefined when it was valid. */
  readonly rejected: string | undefined;
  /** True once the response closed (finished, or cut by either side). */
  closed: boolean;
  /** True when the whole response had been written when it closed; false when the client hung up (or a `cut`). */
  finished: boolean;
  /** Resolves when the response closes. */
  readonly whenClosed: Promise<void>;
}

/** A running wire server. */
export interface WireServer {
  /** `http://127.0.0.1:<port>`. */
  readonly origin: string;
  readonly requests: readonly WireRecord[];
  /** Queues the replies to the next valid requests, in order (a refused request takes none). */
  enqueue(...scripts: WireScript[]): void;
  /** Resolves with the n-th request (0-based) once it has arrived. */
  request(n: number): Promise<WireRecord>;
  /** Closes every connection and the server. */
  close(): Promise<void>;
}

const SSE = { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' };
const JSON_TYPE = { 'content-type': 'application/json' };

/** Starts a {@link WireServer} for `wire` on 127.0.0.1, port 0. A request with nothing queued gets a 500. */
export async function startWireServer(wire: WireKit): Promise<WireServer> {
  const queue: WireScript[] = [];
  const requests: WireRecord[] = [];
  const waiters: (() => void)[] = [];

  function sendReply(res: ServerResponse, reply: WireReply): void {
    const text = typeof reply.body === 'string' ? reply.body : JSON.stringify(reply.body);
    res.writeHead(reply.status, { ...JSON_TYPE, ...reply.headers }).end(text);
  }

  async function writeFrames(res: ServerResponse, frames: readonly string[]): Promise<void> {
    let written: Promise<unknown> = Promise.resolve();
    for (const frame of frames) {
      if (res.destroyed) return;
      written = new Promise((resolve) => res.write(frame, resolve));
    }
    await written; // the frames reach the client before the socket goes
  }

  async function respond(record: WireRecord, script: WireScript, res: ServerResponse): Promise<void> {
    const headers = record.route === 'stream' ? SSE : JSON_TYPE;
    if ('reply' in script) return sendReply(res, script.reply);
    if ('stall' in script) {
      if (script.stall === 'after_headers') res.writeHead(200, headers).flushHeaders();
      return;
    }
    if ('answer' in script) {
      if (record.route !== 'stream') return sendReply(res, { status: 200, body: wire.json(script.answer) });
      const stream = wire.stream(script.answer);
      res.writeHead(200, { ...SSE, ...stream.headers }).flushHeaders();
      await writeFrames(res, stream.frames);
      return void res.end();
    }
    res.writeHead(200, SSE).flushHeaders();
    await writeFrames(res, script.frames);
    if (script.then === 'cut') return void res.socket?.destroy();
    if (script.then === 'end') res.end();
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    let body: unknown = text;
    try {
      body = text ? JSON.parse(text) : undefined;
    } catch {
      /* keep the raw text: validateRequest refuses it */
    }
    const request: WireRequest = { method: req.method ?? '', path: req.url ?? '', headers: req.headers, body };
    const route = wire.route(request);
    const rejected =
      route === undefined ? `not served: ${request.method} ${request.path}` : wire.validateRequest(request);
    let resolveClosed!: () => void;
    const record: WireRecord = {
      ...request,
      route,
      rejected,
      closed: false,
      finished: false,
      whenClosed: new Promise<void>((resolve) => (resolveClosed = resolve)),
    };
    res.on('close', () => {
      record.closed = true;
      record.finished = res.writableFinished;
      resolveClosed();
    });
    requests.push(record);
    waiters.splice(0).forEach((wake) => wake());
    if (rejected !== undefined) {
      return sendReply(res, wire.error({ status: route === undefined ? 404 : 400, message: rejected }));
    }
    const script = queue.shift();
    if (!script) return sendReply(res, wire.error({ status: 500, message: 'wire server: no reply queued' }));
    await respond(record, script, res);
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      if (!res.headersSent) res.writeHead(500, JSON_TYPE);
      res.end(JSON.stringify({ error: { message: `wire server: ${String(err)}` } }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    requests,
    enqueue: (...scripts) => void queue.push(...scripts),
    async request(n) {
      while (requests.length <= n) await new Promise<void>((resolve) => waiters.push(resolve));
      return requests[n]!;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
