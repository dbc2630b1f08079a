/**
 * The benchmarks' OpenAI-compatible server, run in a CHILD process so its CPU
 * and heap are not counted in the measuring process (docs/testing.md).
 *
 * `node --import tsx bench/server.ts` listens on 127.0.0.1 (port 0), prints
 * `port <n>` and, when forked, sends `{ port }` over IPC. What it answers is
 * chosen by the request body's `model` (so a benchmark picks a behaviour with
 * `openaiChat({ model })`); `stream:<n>` and `paced:<n>` sent to `POST …/responses` answer Responses API
 * events instead (`response.created` … `response.output_text.delta` × n … `response.completed`, no `[DONE]`):
 *
 * | model            | answer                                                                 |
 * | ---------------- | ---------------------------------------------------------------------- |
 * | `stream:<n>`     | SSE: content chunks, finish, usage, `[DONE]`; a `res.write` per frame, in one go (coalesced) |
 * | `paced:<n>`      | the same frames, one `res.write` per event-loop turn (`setImmediate`)  |
 * | `hold:<k>`       | SSE: k content chunks, then silence until the client closes            |
 * | `stall`          | SSE headers, then silence                                              |
 * | `stall-json`     | `application/json` headers, then silence (a stalled non-streamed body) |
 * | `stall-noheaders`| nothing at all until the client closes                                 |
 * | anything else    | a short answer, streamed or JSON as the request asks                   |
 *
 * A request to `/v1/messages` (the Anthropic Messages API) gets the same modes in Anthropic's event format
 * (bench/lib/anthropic-frames.ts), streamed.
 *
 * Frames are built with the test server's builders (test/support/openai-server.ts),
 * shaped like the recorded gpt-4o-mini chunks (id, service_tier, fingerprint, obfuscation).
 *
 * IPC: `'stats'` → `{ open, active, requests }` (open TCP connections,
 * responses in progress, requests so far); `'whenIdle'` → `{ idleAt }` once no
 * response is in progress: every request was finished or its connection
 * closed (epoch ms with sub-ms precision: `performance.timeOrigin + performance.now()`).
 * The process exits when its parent disconnects.
 */
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SSE_DONE, chatCompletion, sseData, wireUsage } from '../test/support/openai-server.js';
import { anthropicFrames } from './lib/anthropic-frames.js';
import { sseEvent } from '../src/node/testing/provider-kits/openai-wire.js';

const SSE_HEADERS = { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' };
const WORDS = [' The', ' capital', ' of', ' the', ' United', ' Kingdom', ' is', ' London', '.', ' It'];
const meta = {
  id: 'chatcmpl-Dx0Xq5Xx9rHB2ehcHZCRDsnuymUXc',
  object: 'chat.completion.chunk',
  created: 1782955818,
  model: 'gpt-4o-mini-2024-07-18',
  service_tier: 'default',
  system_fingerprint: 'fp_d0469e1700',
};

/** One recorded-shape chunk (choice 0). */
function chunk(delta: Record<string, unknown>, finishReason: string | null = null, usage: unknown = null): string {
  return sseData({
    ...meta,
    choices: finishReason === 'none' ? [] : [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
    usage,
    obfuscation: 'auU6fTns',
  });
}

const cache = new Map<number, string[]>();
/** The frames of an n-chunk text stream (cached). */
function openaiFrames(n: number): string[] {
  let frames = cache.get(n);
  if (!frames) {
    frames = [chunk({ role: 'assistant', content: '', refusal: null })];
    for (let i = 0; i < n; i++) frames.push(chunk({ content: WORDS[i % WORDS.length] }));
    frames.push(chunk({}, 'stop'), chunk({}, 'none', wireUsage(12, n)), SSE_DONE);
    cache.set(n, frames);
  }
  return frames;
}

const RESPONSE_ID = 'resp_067b756b377f97050069e16fa9fbfc8190b2bc00b6c520cb01';
const MESSAGE_ID = 'msg_067b756b377f97050069e16faa53c88190a288211b49a2927f';
/** A recorded-shape Responses `response` object (gpt-4.1, store on, no tools). */
function response(status: string, output: unknown[], usage: unknown): Record<string, unknown> {
  return {
    id: RESPONSE_ID,
    object: 'response',
    created_at: 1776381866,
    status,
    background: false,
    error: null,
    incomplete_details: null,
    instructions: null,
    max_output_tokens: null,
    model: 'gpt-4.1-2025-04-14',
    output,
    parallel_tool_calls: true,
    previous_response_id: null,
    reasoning: { effort: null, summary: null },
    service_tier: 'default',
    store: true,
    temperature: 1.0,
    text: { format: { type: 'text' }, verbosity: 'medium' },
    tool_choice: 'auto',
    tools: [],
    top_p: 1.0,
    truncation: 'disabled',
    usage,
    user: null,
    metadata: {},
  };
}

const responsesCache = new Map<number, string[]>();
/** The frames of an n-delta Responses text stream (cached), shaped like the recorded gpt-4.1 events. */
function responsesFrames(n: number): string[] {
  let frames = responsesCache.get(n);
  if (!frames) {
    let seq = 0;
    const item = { id: MESSAGE_ID, type: 'message', status: 'in_progress', content: [], role: 'assistant' };
    const part = { type: 'output_text', annotations: [], logprobs: [], text: '' };
    frames = [
      sseEvent('response.created', { response: response('in_progress', [], null), sequence_number: seq++ }),
      sseEvent('response.in_progress', { response: response('in_progress', [], null), sequence_number: seq++ }),
      sseEvent('response.output_item.added', { item, output_index: 0, sequence_number: seq++ }),
      sseEvent('response.content_part.added', {
        content_index: 0,
        item_id: MESSAGE_ID,
        output_index: 0,
        part,
        sequence_number: seq++,
      }),
    ];
    let text = '';
    for (let i = 0; i < n; i++) {
      const delta = WORDS[i % WORDS.length]!;
      text += delta;
      frames.push(
        sseEvent('response.output_text.delta', {
          content_index: 0,
          delta,
          item_id: MESSAGE_ID,
          logprobs: [],
          obfuscation: 'TSLJJ58VSbxs00x',
          output_index: 0,
          sequence_number: seq++,
        }),
      );
    }
    const done = { ...part, text };
    const message = { ...item, status: 'completed', content: [done] };
    const usage = {
      input_tokens: 12,
      input_tokens_details: { cached_tokens: 0 },
      output_tokens: n,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: 12 + n,
    };
    frames.push(
      sseEvent('response.output_text.done', {
        content_index: 0,
        item_id: MESSAGE_ID,
        logprobs: [],
        output_index: 0,
        sequence_number: seq++,
        text,
      }),
      sseEvent('response.content_part.done', {
        content_index: 0,
        item_id: MESSAGE_ID,
        output_index: 0,
        part: done,
        sequence_number: seq++,
      }),
      sseEvent('response.output_item.done', { item: message, output_index: 0, sequence_number: seq++ }),
      sseEvent('response.completed', { response: response('completed', [message], usage), sequence_number: seq }),
    );
    responsesCache.set(n, frames);
  }
  return frames;
}

let open = 0;
let active = 0;
let requests = 0;
const now = (): number => performance.timeOrigin + performance.now();
let lastIdleAt = now();
const idleWaiters: ((at: number) => void)[] = [];

/** Which wire a request speaks: Chat Completions, the Responses API, or Anthropic's Messages (POST /v1/messages). */
type Wire = 'chat' | 'responses' | 'anthropic';

function answer(res: ServerResponse, body: { model?: string; stream?: boolean }, wire: Wire): void {
  const model = String(body.model ?? '');
  const [mode, arg] = model.split(':');
  const n = Number(arg ?? 0);
  const anthropic = wire === 'anthropic';
  // The same modes in Anthropic's Messages format (frames: bench/lib/anthropic-frames.ts).
  const streamFrames = anthropic ? anthropicFrames : openaiFrames;
  const textFrames = wire === 'responses' ? responsesFrames : streamFrames;
  switch (mode) {
    case 'stream':
      res.writeHead(200, SSE_HEADERS);
      for (const frame of textFrames(n)) res.write(frame);
      res.end();
      return;
    case 'paced': {
      res.writeHead(200, SSE_HEADERS);
      const frames = textFrames(n);
      let i = 0;
      const step = (): void => {
        if (res.destroyed) return;
        if (i === frames.length) return void res.end();
        res.write(frames[i++]!);
        setImmediate(step);
      };
      step();
      return;
    }
    case 'hold': {
      res.writeHead(200, SSE_HEADERS);
      const frames = streamFrames(n);
      res.write(frames.slice(0, n + (anthropic ? 2 : 1)).join(''));
      return;
    }
    case 'stall':
      res.writeHead(200, SSE_HEADERS).flushHeaders();
      return;
    case 'stall-json':
      res.writeHead(200, { 'content-type': 'application/json' }).flushHeaders();
      return;
    case 'stall-noheaders':
      return;
    default:
      if (body.stream) {
        res.writeHead(200, SSE_HEADERS);
        return void res.end(streamFrames(2).join(''));
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(chatCompletion({ content: 'ok' })));
  }
}

const server = createServer({ requestTimeout: 0, headersTimeout: 0, keepAliveTimeout: 60_000 }, (req, res) => {
  requests++;
  active++;
  res.on('close', () => {
    if (--active === 0) {
      lastIdleAt = now();
      for (const wake of idleWaiters.splice(0)) wake(lastIdleAt);
    }
  });
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    let body: { model?: string; stream?: boolean } = {};
    try {
      body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    } catch {
      /* not JSON: the default answer */
    }
    const url = req.url ?? '';
    answer(res, body, url.startsWith('/v1/messages') ? 'anthropic' : url.endsWith('/responses') ? 'responses' : 'chat');
  });
});
server.on('connection', (socket) => {
  open++;
  socket.setNoDelay(true);
  socket.on('close', () => void open--);
});
server.listen({ port: 0, host: '127.0.0.1', backlog: 16_384 }, () => {
  const { port } = server.address() as AddressInfo;
  console.log(`port ${port}`);
  process.send?.({ port });
});

process.on('message', (msg: unknown) => {
  if (msg === 'stats') process.send?.({ open, active, requests });
  else if (msg === 'whenIdle') {
    if (active === 0) process.send?.({ idleAt: lastIdleAt });
    else idleWaiters.push((idleAt) => process.send?.({ idleAt }));
  }
});
process.on('disconnect', () => process.exit(0));
