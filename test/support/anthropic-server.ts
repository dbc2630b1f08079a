/**
 * A local server on 127.0.0.1 speaking Anthropic's Messages API wire format (`POST /v1/messages`): it answers from a
 * script (hand-built fixtures in `test/fixtures/anthropic`, raw SSE frames, JSON bodies, errors, stalls, cuts) and,
 * like the real API, REJECTS with a 400 `invalid_request_error` a request the API would reject
 * ({@link validateMessagesRequest}: the rules of the conformance suite's `anthropicWire`), including a thinking
 * block modified or dropped: the server remembers every thinking block it sent, with its signature, and the tool
 * calls it came with. Every request is recorded with its
 * close state and, when refused, why. Reusable: a function that starts it with a script of answers.
 */
import { existsSync, readFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import {
  anthropicMessagesFault,
  type ThinkingLedger,
} from '../../src/node/testing/provider-kits/anthropic-validate.js';
import { recordRequest, repoRoot, sseFrames } from './openai-server.js';

/** The hand-built Anthropic wire data (`test/fixtures/anthropic`, see its README). */
export const ANTHROPIC_FIXTURES_DIR = path.join(repoRoot, 'test/fixtures/anthropic');

/** One request the server received, updated in place as its response ends. */
export interface AnthropicRequest {
  readonly method: string;
  readonly path: string;
  readonly headers: IncomingHttpHeaders;
  /** The JSON body, parsed (the raw text when it is not JSON). */
  readonly body: any;
  /** Why the server refused it with a 400 (what the real API would say), or undefined when it was valid. */
  rejected: string | undefined;
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
/** What the server answers to one (valid) request. */
export type AnthropicAnswer =
  /** A fixture stream (`*.sse`) replayed verbatim; `cutAfter` destroys the socket after n SSE frames. */
  | { fixture: string; delayMs?: number; cutAfter?: number; headers?: Headers }
  /** Raw SSE frames (each ending `\n\n`); `hold` keeps the response open and silent after them. */
  | { sse: readonly string[]; delayMs?: number; cutAfter?: number; hold?: boolean; headers?: Headers }
  /** A JSON body (a whole Message, or anything else), after `delayMs` when given. */
  | { json: unknown; status?: number; headers?: Headers; delayMs?: number }
  /** An error fixture (`error-*.json`) with its sibling `.headers.json`, served with `status`. */
  | { errorFixture: string; status: number; headers?: Headers }
  /** Sends the headers (unless `sendHeaders: false`), then nothing until the client closes. */
  | { stall: true; sendHeaders?: boolean; headers?: Headers }
  | ((req: AnthropicRequest) => AnthropicAnswer | Promise<AnthropicAnswer>);

/** A running Anthropic-shaped server. */
export interface AnthropicServer {
  /** `http://127.0.0.1:<port>`: the SDK's `baseURL` (it appends `/v1/messages`). */
  readonly baseURL: string;
  readonly requests: AnthropicRequest[];
  /** Queues answers for the next valid requests. */
  enqueue(...answers: AnthropicAnswer[]): void;
  /** Resolves with the n-th request (0-based) once it has arrived. */
  request(n: number): Promise<AnthropicRequest>;
  /** The reasons of every refused request, in order (empty when every request was valid). */
  rejections(): string[];
  close(): Promise<void>;
}

/** Options of {@link startAnthropicServer}. */
export interface AnthropicServerOptions {
  /** Check each request as the real API does (default true); false serves whatever comes. */
  readonly validate?: boolean;
}

const SSE_HEADERS = { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' };

/** Reads a fixture file as text. */
export function readAnthropicFixture(name: string): string {
  return readFileSync(path.join(ANTHROPIC_FIXTURES_DIR, name), 'utf8');
}

function fixtureHeaders(name: string): Record<string, string> {
  const file = path.join(ANTHROPIC_FIXTURES_DIR, name.replace(/\.(sse|json)$/, '.headers.json'));
  return existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as Record<string, string>) : {};
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A thinking or redacted thinking block exactly as the server sent it. */
type ThinkingBlock = Readonly<Record<string, unknown>>;

/**
 * What the server sent, for the checks on what comes back: every thinking block (by its signature or data) and,
 * for each tool_use id, the thinking blocks of the message it came in.
 */
class Issued implements ThinkingLedger {
  readonly thinking = new Map<string, ThinkingBlock>();
  readonly byToolUse = new Map<string, ThinkingBlock[]>();

  /** A thinking block is refused unless it is one this server sent, unchanged. */
  block(block: ThinkingBlock, _content: readonly ThinkingBlock[], at: string): string | undefined {
    const sent = this.thinking.get(thinkingKey(block));
    if (!sent) return `${at}: Invalid \`signature\` in \`thinking\` block`;
    if (!isDeepStrictEqual({ ...block }, { ...sent })) {
      return `${at}: \`thinking\` or \`redacted_thinking\` blocks cannot be modified`;
    }
    return undefined;
  }

  /** The thinking blocks each tool call came with are all still in its message. */
  dropped(content: readonly ThinkingBlock[], at: string): string | undefined {
    for (const use of content.filter((b) => b['type'] === 'tool_use')) {
      const came = this.byToolUse.get(use['id'] as string) ?? [];
      const kept = came.every((t) => content.some((b) => isDeepStrictEqual({ ...b }, { ...t })));
      if (!kept) return `${at}: the thinking blocks of the response that called ${String(use['id'])} were dropped`;
    }
    return undefined;
  }

  /** Reads a served message's content blocks. */
  note(content: readonly Record<string, unknown>[]): void {
    const thinking = content.filter((b) => b['type'] === 'thinking' || b['type'] === 'redacted_thinking');
    for (const block of thinking) this.thinking.set(thinkingKey(block), block);
    for (const block of content) if (block['type'] === 'tool_use') this.byToolUse.set(block['id'] as string, thinking);
  }

  /** Reads a served SSE stream (assembling its blocks as a client would). */
  noteStream(frames: readonly string[]): void {
    const blocks: Record<string, unknown>[] = [];
    for (const frame of frames) {
      const data = /^data: (.*)$/m.exec(frame)?.[1];
      if (!data) continue;
      let event: any;
      try {
        event = JSON.parse(data);
      } catch {
        continue;
      }
      if (event.type === 'content_block_start') blocks[event.index] = { ...event.content_block };
      if (event.type !== 'content_block_delta' || !blocks[event.index]) continue;
      const block = blocks[event.index]!;
      const delta = event.delta;
      if (delta.type === 'thinking_delta') block['thinking'] = `${block['thinking'] as string}${delta.thinking}`;
      if (delta.type === 'signature_delta') block['signature'] = `${block['signature'] as string}${delta.signature}`;
    }
    this.note(blocks.filter(Boolean));
  }
}

const thinkingKey = (block: Readonly<Record<string, unknown>>): string =>
  block['type'] === 'thinking' ? `sig:${String(block['signature'])}` : `data:${String(block['data'])}`;

/**
 * Why the real Messages API would refuse `body` (the rules of `anthropicMessagesFault`, shared with the conformance
 * suite's `anthropicWire`), with thinking blocks checked against what this server sent (`issued`): each unchanged
 * from what was sent, identified by its signature, and none dropped from a message with the tool calls it came
 * with. @returns the reason, or undefined when it is valid.
 */
export function validateMessagesRequest(body: unknown, issued: Issued = new Issued()): string | undefined {
  return anthropicMessagesFault(body, issued);
}

/**
 * Starts the server on 127.0.0.1, port 0. Valid requests are answered in order from the queue (`script`, then
 * `enqueue`); when it is empty, a `script` function answers, else a 500 says nothing was queued. An invalid request
 * is answered with a 400 `invalid_request_error` and takes nothing from the queue.
 */
export async function startAnthropicServer(
  script?: readonly AnthropicAnswer[] | ((req: AnthropicRequest) => AnthropicAnswer | Promise<AnthropicAnswer>),
  options: AnthropicServerOptions = {},
): Promise<AnthropicServer> {
  const queue: AnthropicAnswer[] = Array.isArray(script) ? [...script] : [];
  const fallback = typeof script === 'function' ? script : undefined;
  const requests: AnthropicRequest[] = [];
  const waiters: (() => void)[] = [];
  const issued = new Issued();

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const record: AnthropicRequest = Object.assign(await recordRequest(req, res), { rejected: undefined });
    const { body } = record;
    requests.push(record);
    waiters.splice(0).forEach((wake) => wake());
    const error = (status: number, type: string, message: string) =>
      void res
        .writeHead(status, { 'content-type': 'application/json', 'request-id': `req_${requests.length}` })
        .end(JSON.stringify({ type: 'error', error: { type, message } }));
    if (record.method !== 'POST' || !record.path.startsWith('/v1/messages')) {
      return error(404, 'not_found_error', `anthropic test server: no route ${record.method} ${record.path}`);
    }
    if (!req.headers['x-api-key'] && !req.headers['authorization']) {
      return error(401, 'authentication_error', 'x-api-key header is required');
    }
    if (options.validate !== false) {
      record.rejected = validateMessagesRequest(body, issued);
      if (record.rejected !== undefined) return error(400, 'invalid_request_error', record.rejected);
    }
    let answer = queue.shift() ?? fallback;
    while (typeof answer === 'function') answer = await answer(record);
    if (!answer) return error(500, 'api_error', `anthropic test server: nothing queued for request ${requests.length}`);
    await respond(answer, res);
  }

  async function respond(answer: Exclude<AnthropicAnswer, (...args: never[]) => unknown>, res: ServerResponse) {
    if ('stall' in answer) {
      if (answer.sendHeaders !== false) res.writeHead(200, { ...SSE_HEADERS, ...answer.headers }).flushHeaders();
      return;
    }
    if ('json' in answer) {
      if (answer.delayMs) await sleep(answer.delayMs);
      if (res.destroyed) return;
      const content = (answer.json as { content?: unknown } | null)?.content;
      if (Array.isArray(content)) issued.note(content as Record<string, unknown>[]);
      res.writeHead(answer.status ?? 200, { 'content-type': 'application/json', ...answer.headers });
      return void res.end(typeof answer.json === 'string' ? answer.json : JSON.stringify(answer.json));
    }
    if ('errorFixture' in answer) {
      const headers = { 'content-type': 'application/json', ...fixtureHeaders(answer.errorFixture), ...answer.headers };
      return void res.writeHead(answer.status, headers).end(readAnthropicFixture(answer.errorFixture));
    }
    const frames = 'fixture' in answer ? sseFrames(readAnthropicFixture(answer.fixture)) : [...answer.sse];
    const cut = answer.cutAfter ?? Infinity;
    issued.noteStream(frames.slice(0, cut));
    res.writeHead(200, { ...SSE_HEADERS, 'request-id': `req_${requests.length}`, ...answer.headers });
    res.flushHeaders();
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
    if ('hold' in answer && answer.hold) return;
    res.end();
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ type: 'error', error: { type: 'api_error', message: String(err) } }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseURL: `http://127.0.0.1:${port}`,
    requests,
    enqueue: (...answers) => void queue.push(...answers),
    async request(n) {
      while (requests.length <= n) await new Promise<void>((resolve) => waiters.push(resolve));
      return requests[n]!;
    },
    rejections: () => requests.flatMap((r) => (r.rejected === undefined ? [] : [r.rejected])),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

// ── builders for scripted answers ────────────────────────────────────────────

/** One SSE frame of the Messages stream: `event: <type>\ndata: <json>\n\n`. */
export const anthropicEvent = (payload: { type: string } & Record<string, unknown>): string =>
  `event: ${payload.type}\ndata: ${JSON.stringify(payload)}\n\n`;

/** A whole streamed text answer (`end_turn`), in the documented event order, with `usage` `[input, output]`. */
export function anthropicTextStream(text: string, usage: [number, number] = [20, 5]): AnthropicAnswer {
  return {
    sse: [
      anthropicEvent({
        type: 'message_start',
        message: {
          id: 'msg_scripted',
          type: 'message',
          role: 'assistant',
          model: 'claude-test',
          content: [],
          stop_reason: null,
          stop_sequence: null,
          usage: { input_tokens: usage[0], output_tokens: 1 },
        },
      }),
      anthropicEvent({ type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }),
      anthropicEvent({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text } }),
      anthropicEvent({ type: 'content_block_stop', index: 0 }),
      anthropicEvent({
        type: 'message_delta',
        delta: { stop_reason: 'end_turn', stop_sequence: null },
        usage: { output_tokens: usage[1] },
      }),
      anthropicEvent({ type: 'message_stop' }),
    ],
  };
}

/** A whole (non-streamed) Message body. */
export function anthropicMessage(
  content: readonly Record<string, unknown>[],
  stopReason = 'end_turn',
  usage: Record<string, number> = { input_tokens: 20, output_tokens: 5 },
) {
  return {
    id: 'msg_body',
    type: 'message',
    role: 'assistant',
    model: 'claude-test',
    content,
    stop_reason: stopReason,
    stop_sequence: null,
    usage,
  };
}

/** A content block for {@link anthropicStream}: what the finished block holds. */
export type StreamBlock =
  | { type: 'text'; text: string }
  | { type: 'thinking'; thinking: string; signature: string }
  | { type: 'redacted_thinking'; data: string }
  | { type: 'tool_use'; id: string; name: string; input: Record<string, unknown> };

/**
 * A whole streamed answer made of `blocks`, in the documented event order: `message_start`, per block its
 * `content_block_start` (empty), one delta (`text_delta`, `thinking_delta` then `signature_delta`, `input_json_delta`;
 * none for redacted thinking, which starts whole) and `content_block_stop`, then `message_delta` with `stopReason`
 * and `message_stop`.
 */
export function anthropicStream(
  blocks: readonly StreamBlock[],
  stopReason: string,
  usage: [number, number] = [20, 5],
): AnthropicAnswer {
  const sse = [
    anthropicEvent({
      type: 'message_start',
      message: {
        id: 'msg_built',
        type: 'message',
        role: 'assistant',
        model: 'claude-test',
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: { input_tokens: usage[0], output_tokens: 1 },
      },
    }),
  ];
  blocks.forEach((block, index) => {
    const start = (content_block: Record<string, unknown>) =>
      sse.push(anthropicEvent({ type: 'content_block_start', index, content_block }));
    const delta = (d: Record<string, unknown>) =>
      sse.push(anthropicEvent({ type: 'content_block_delta', index, delta: d }));
    switch (block.type) {
      case 'text':
        start({ type: 'text', text: '' });
        delta({ type: 'text_delta', text: block.text });
        break;
      case 'thinking':
        start({ type: 'thinking', thinking: '', signature: '' });
        delta({ type: 'thinking_delta', thinking: block.thinking });
        delta({ type: 'signature_delta', signature: block.signature });
        break;
      case 'redacted_thinking':
        start({ type: 'redacted_thinking', data: block.data });
        break;
      case 'tool_use':
        start({ type: 'tool_use', id: block.id, name: block.name, input: {} });
        delta({ type: 'input_json_delta', partial_json: JSON.stringify(block.input) });
        break;
    }
    sse.push(anthropicEvent({ type: 'content_block_stop', index }));
  });
  sse.push(
    anthropicEvent({
      type: 'message_delta',
      delta: { stop_reason: stopReason, stop_sequence: null },
      usage: { output_tokens: usage[1] },
    }),
    anthropicEvent({ type: 'message_stop' }),
  );
  return { sse };
}
