import { readFileSync, existsSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  SSE_DONE,
  chatChunk,
  sseData,
  toolCallDelta,
  wireUsage,
} from '../../src/node/testing/provider-kits/openai-wire.js';

/** The repository root (this file is `test/support/openai-server.ts`). */
export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
/** The recorded OpenAI wire data (`test/fixtures/openai`, provenance in its README). */
export const FIXTURES_DIR = path.join(repoRoot, 'test/fixtures/openai');

/** One request the server received, updated in place as its response ends. */
export interface RecordedRequest {
  readonly method: string;
  readonly path: string;
  readonly headers: IncomingHttpHeaders;
  /** The JSON body, parsed (the raw text when it is not JSON). */
  readonly body: any;
  /** True once the response closed (finished or cut by either side). */
  closed: boolean;
  /** `performance.now()` when it closed. */
  closedAt: number | undefined;
  /** True when the whole response had been written when it closed; false = the client hung up (or `cutAfter`). */
  finished: boolean;
  /** Resolves when the response closes. */
  readonly whenClosed: Promise<void>;
}

type Headers = Readonly<Record<string, string>>;
/** What the server answers to one request. */
export type ScriptedResponse =
  /**
   * A recorded stream replayed verbatim, with its `.headers.json` when present; `cutAfter` destroys the socket after n
   * SSE frames.
   */
  | { fixture: string; delayMs?: number; cutAfter?: number; status?: number; headers?: Headers }
  /**
   * Raw SSE frames written verbatim (include the `\n\n`), then the response ends (or the socket is destroyed after
   * `cutAfter`, or with `hold` stays open, silent, until the client closes).
   */
  | { sse: readonly string[]; delayMs?: number; cutAfter?: number; hold?: boolean; status?: number; headers?: Headers }
  /** A JSON body (non-streaming answer or error). */
  | { json: unknown; status?: number; headers?: Headers; delayMs?: number }
  /** A recorded `error-*.json` body with its sibling `.headers.json`, served with `status`. */
  | { errorFixture: string; status: number; headers?: Headers }
  /** Sends the headers (unless `sendHeaders: false`), then nothing until the client closes. */
  | { stall: true; sendHeaders?: boolean; status?: number; headers?: Headers }
  | ((req: RecordedRequest) => ScriptedResponse | Promise<ScriptedResponse>);

/** A running test server. */
export interface OpenAIServer {
  /** `http://127.0.0.1:<port>/v1`, for `baseURL`. */
  readonly baseURL: string;
  /** `http://127.0.0.1:<port>`. */
  readonly url: string;
  readonly requests: RecordedRequest[];
  /** Queues the answer to the next unanswered request. */
  enqueue(...responses: ScriptedResponse[]): void;
  /** Resolves with the n-th request (0-based) once it has arrived. */
  request(n: number): Promise<RecordedRequest>;
  close(): Promise<void>;
}

const SSE_HEADERS = { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' };
const DROPPED = new Set(['content-length', 'transfer-encoding', 'connection', 'keep-alive']);

/** Reads a fixture file as text. */
export function readFixture(name: string): string {
  return readFileSync(path.join(FIXTURES_DIR, name), 'utf8');
}

/** Splits SSE text into frames, each ending with its blank line; joined they give the text back byte for byte. */
export function sseFrames(text: string): string[] {
  return text.split(/(?<=\n\n)/).filter((f) => f.length > 0);
}

function fixtureHeaders(name: string): Record<string, string> | undefined {
  const file = path.join(FIXTURES_DIR, name.replace(/\.(sse|json)$/, '.headers.json'));
  if (!existsSync(file)) return undefined;
  const raw = JSON.parse(readFileSync(file, 'utf8')) as Record<string, string | string[]>;
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(raw))
    if (!DROPPED.has(k.toLowerCase())) out[k] = Array.isArray(v) ? v.join(', ') : v;
  return out;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Starts a local OpenAI-compatible server on 127.0.0.1, port 0. Requests are
 * answered in order from the queue (`script`, then `enqueue`); when it is
 * empty, a `script` function answers, else a 500 explains that nothing was
 * queued. Every request is recorded with its close state.
 */
export async function startOpenAIServer(
  script?: readonly ScriptedResponse[] | ((req: RecordedRequest) => ScriptedResponse | Promise<ScriptedResponse>),
): Promise<OpenAIServer> {
  const queue: ScriptedResponse[] = Array.isArray(script) ? [...script] : [];
  const fallback = typeof script === 'function' ? script : undefined;
  const requests: RecordedRequest[] = [];
  const waiters: (() => void)[] = [];

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const record = await recordRequest(req, res);
    requests.push(record);
    waiters.splice(0).forEach((wake) => wake());
    let answer = queue.shift() ?? fallback;
    while (typeof answer === 'function') answer = await answer(record);
    if (!answer) {
      const message = `openai test server: no response queued for ${record.method} ${record.path}`;
      return void res
        .writeHead(500, { 'content-type': 'application/json' })
        .end(JSON.stringify({ error: { message, type: 'test_server_error' } }));
    }
    await respond(answer, res);
  }

  async function respond(
    answer: Exclude<ScriptedResponse, (...args: never[]) => unknown>,
    res: ServerResponse,
  ): Promise<void> {
    if ('stall' in answer) {
      if (answer.sendHeaders !== false)
        res.writeHead(answer.status ?? 200, { ...SSE_HEADERS, ...answer.headers }).flushHeaders();
      return;
    }
    if ('json' in answer) {
      if (answer.delayMs) await sleep(answer.delayMs);
      if (res.destroyed) return;
      res.writeHead(answer.status ?? 200, { 'content-type': 'application/json', ...answer.headers });
      return void res.end(typeof answer.json === 'string' ? answer.json : JSON.stringify(answer.json));
    }
    if ('errorFixture' in answer) {
      const headers = { 'content-type': 'application/json', ...fixtureHeaders(answer.errorFixture), ...answer.headers };
      return void res.writeHead(answer.status, headers).end(readFixture(answer.errorFixture));
    }
    const frames = 'fixture' in answer ? sseFrames(readFixture(answer.fixture)) : [...answer.sse];
    const recorded = 'fixture' in answer ? fixtureHeaders(answer.fixture) : undefined;
    res.writeHead(answer.status ?? 200, { ...SSE_HEADERS, ...recorded, ...answer.headers });
    res.flushHeaders();
    const cut = answer.cutAfter ?? Infinity;
    let written: Promise<unknown> = Promise.resolve();
    for (let i = 0; i < Math.min(cut, frames.length); i++) {
      if (i > 0 && answer.delayMs) await sleep(answer.delayMs);
      if (res.destroyed) return;
      written = new Promise((resolve) => res.write(frames[i]!, resolve));
    }
    if (cut !== Infinity) {
      await written; // the frames reach the client before the socket goes
      return void res.socket?.destroy();
    }
    if ('hold' in answer && answer.hold) return; // a stalled stream: open and silent
    res.end();
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: `openai test server: ${String(err)}`, type: 'test_server_error' } }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const url = `http://127.0.0.1:${port}`;
  return {
    baseURL: `${url}/v1`,
    url,
    requests,
    enqueue: (...responses) => void queue.push(...responses),
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

// ── builders for scripted tests (shared with the OpenAI provider kits of loopctl/node/testing) ──────

export {
  SSE_DONE,
  chatChunk,
  chatCompletion,
  responsesBody,
  sseData,
  toolCallDelta,
  wireUsage,
} from '../../src/node/testing/provider-kits/openai-wire.js';
/** What an adapter Observable produced: every event, then `completed` or the `error`. */
export interface Collected<E> {
  readonly events: E[];
  readonly completed: boolean;
  readonly error: unknown;
}

/** Subscribes and resolves when the Observable completes or errors (never rejects). */
export function collect<E>(source: {
  subscribe(observer: { next(e: E): void; error(err: unknown): void; complete(): void }): unknown;
}): Promise<Collected<E>> {
  return new Promise((resolve) => {
    const events: E[] = [];
    source.subscribe({
      next: (e) => void events.push(e),
      error: (error) => resolve({ events, completed: false, error }),
      complete: () => resolve({ events, completed: true, error: undefined }),
    });
  });
}

/**
 * A scripted Chat Completions stream that makes these tool calls (arguments as JSON), then `finish_reason: tool_calls`
 * and usage.
 */
export function toolCallsStream(calls: readonly { id: string; name: string; args: unknown }[]): ScriptedResponse {
  return {
    sse: [
      sseData(chatChunk({ role: 'assistant', content: null })),
      ...calls.map((c, i) =>
        sseData(chatChunk({ tool_calls: [toolCallDelta(i, JSON.stringify(c.args), c.id, c.name)] })),
      ),
      sseData(chatChunk({}, { finishReason: 'tool_calls' })),
      sseData(chatChunk({}, { choices: [], usage: wireUsage(20, 10) })),
      SSE_DONE,
    ],
  };
}

/** A scripted Chat Completions stream that answers `text` in one delta, then `finish_reason: stop` with usage. */
export function textStream(text: string): ScriptedResponse {
  return {
    sse: [
      sseData(chatChunk({ role: 'assistant', content: text })),
      sseData(chatChunk({}, { finishReason: 'stop', usage: wireUsage(30, 5) })),
      SSE_DONE,
    ],
  };
}

/**
 * Reads one request of a local wire server: its body (parsed JSON, the raw text when it is not JSON) and a
 * record whose `closed`, `closedAt`, `finished` and `whenClosed` follow the response's socket. The Anthropic
 * and Gemini servers extend the record with fields of their own (`Object.assign` keeps the same object).
 */
export async function recordRequest(req: IncomingMessage, res: ServerResponse): Promise<RecordedRequest> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  let body: unknown = text;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    /* keep the raw text */
  }
  let resolveClosed!: () => void;
  const record: RecordedRequest = {
    method: req.method ?? '',
    path: req.url ?? '',
    headers: req.headers,
    body,
    closed: false,
    closedAt: undefined,
    finished: false,
    whenClosed: new Promise<void>((resolve) => (resolveClosed = resolve)),
  };
  res.on('close', () => {
    record.closed = true;
    record.closedAt = performance.now();
    record.finished = res.writableFinished;
    resolveClosed();
  });
  return record;
}
