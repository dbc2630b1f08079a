/**
 * The Gemini benchmark server (bench/gemini.ts), run in a CHILD process (bench/lib/child-server.ts) so its CPU is
 * not counted in the measuring process. It speaks Gemini's REST wire format:
 * `POST /v1beta/models/{model}:streamGenerateContent?alt=sse` (and `:generateContent`), the behaviour chosen by
 * `{model}`:
 *
 * | model          | answer                                                                                |
 * | -------------- | ------------------------------------------------------------------------------------- |
 * | `stream-<n>`   | SSE: n text chunks, the last with `finishReason: STOP`; every frame its own write, in one go |
 * | `paced-<n>`    | the same frames, one write per event-loop turn (`setImmediate`)                       |
 * | `hold-<k>`     | SSE: k text chunks, then silence until the client closes                              |
 * | anything else  | a short answer, streamed or JSON as the path asks                                     |
 *
 * Every chunk is shaped like Gemini's (candidate 0 with one text part and `index`, `usageMetadata`, `modelVersion`,
 * `responseId`; `\r\n\r\n` between events). IPC as bench/server.ts: `'stats'`, `'whenIdle'`; it exits when its
 * parent disconnects.
 */
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

const SSE_HEADERS = { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' };
const WORDS = [' The', ' capital', ' of', ' the', ' United', ' Kingdom', ' is', ' London', '.', ' It'];

function chunk(i: number, text: string, last: boolean): string {
  const payload = {
    candidates: [
      { content: { parts: [{ text }], role: 'model' }, ...(last ? { finishReason: 'STOP' } : {}), index: 0 },
    ],
    usageMetadata: { promptTokenCount: 12, candidatesTokenCount: i + 1, totalTokenCount: 13 + i },
    modelVersion: 'gemini-2.5-flash',
    responseId: 'bench-1vUsaPXTLbuInvgPgbuh0QQ',
  };
  return `data: ${JSON.stringify(payload)}\r\n\r\n`;
}

const cache = new Map<number, string[]>();
/** The frames of an n-chunk text stream (cached). */
function frames(n: number): string[] {
  let list = cache.get(n);
  if (!list) {
    list = Array.from({ length: n }, (_, i) => chunk(i, WORDS[i % WORDS.length]!, i === n - 1));
    cache.set(n, list);
  }
  return list;
}

let open = 0;
let active = 0;
let requests = 0;
const now = (): number => performance.timeOrigin + performance.now();
let lastIdleAt = now();
const idleWaiters: ((at: number) => void)[] = [];
const PATH = /^\/v1beta\/models\/([^/:?]+):(streamGenerateContent|generateContent)/;

function answer(res: ServerResponse, url: string): void {
  const match = PATH.exec(url);
  const [mode, arg] = (match?.[1] ?? '').split('-');
  const n = Number(arg ?? 0);
  const stream = match?.[2] === 'streamGenerateContent';
  switch (mode) {
    case 'stream':
      res.writeHead(200, SSE_HEADERS);
      for (const frame of frames(n)) res.write(frame);
      res.end();
      return;
    case 'paced': {
      res.writeHead(200, SSE_HEADERS);
      const list = frames(n);
      let i = 0;
      const step = (): void => {
        if (res.destroyed) return;
        if (i === list.length) return void res.end();
        res.write(list[i++]!);
        setImmediate(step);
      };
      step();
      return;
    }
    case 'hold':
      res.writeHead(200, SSE_HEADERS);
      res.write(
        frames(n + 1)
          .slice(0, n)
          .join(''),
      );
      return;
    default:
      if (stream) {
        res.writeHead(200, SSE_HEADERS);
        return void res.end(frames(2).join(''));
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(frames(1)[0]!.slice('data: '.length).trim());
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
  req.resume();
  req.on('end', () => answer(res, req.url ?? ''));
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
