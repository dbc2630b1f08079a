/**
 * Cancel of a Gemini call at every checkpoint: the SDK's fetch is aborted (undici destroys the socket at once)
 * before `cancel()` / `unsubscribe()` returns, `run_cancelled` is delivered before it returns, the server sees the
 * socket close with its answer unfinished, and nothing is emitted after it. Also: the Observable is cold, and
 * neither finished nor cancelled calls leave sockets behind.
 */
import { GoogleGenAI } from '@google/genai';
import { firstValueFrom, take, toArray } from 'rxjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CancelSignal } from '../src/cancel/index.js';
import { defineAgent, run, type RunEvent } from '../src/index.js';
import { gemini } from '../src/model/gemini/index.js';
import type { ModelEvent, ModelProvider, ModelRequest } from '../src/model/types.js';
import { collect } from './support/openai-server.js';
import {
  startGeminiServer,
  type GeminiRequest,
  type GeminiScript,
  type GeminiServer,
} from './support/gemini-server.js';

let server: GeminiServer;
beforeAll(async () => void (server = await startGeminiServer()));
afterAll(() => server.close());

const request = (stream: boolean): ModelRequest => ({
  instructions: '',
  items: [{ type: 'user', id: 'u', text: 'hi' }],
  tools: [],
  stream,
});

/** A provider whose SDK client records the AbortSignal of every fetch it makes (global fetch underneath). */
function watched() {
  const signals: AbortSignal[] = [];
  const fetchSpy: typeof fetch = (input, init) => {
    if (init?.signal) signals.push(init.signal);
    return fetch(input, init);
  };
  const client = new GoogleGenAI({ apiKey: 'k', httpOptions: { baseUrl: server.url, fetch: fetchSpy } });
  return { provider: gemini({ model: 'gemini-2.5-flash', client }), signals };
}

/** Resolves true when `req` closes within 2 s ("it happened", not a timing assertion). */
const closedSoon = (req: GeminiRequest) =>
  Promise.race([req.whenClosed.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), 2000))]);

/** Resolves once the client has read at least one streamed chunk of `req` (its first delta arrived). */
async function cancelWhileServing(
  provider: ModelProvider,
  signals: AbortSignal[],
  stream: boolean,
  answer: GeminiScript,
) {
  server.enqueue(answer);
  const n = server.requests.length;
  const seen: string[] = [];
  const sub = provider.call(request(stream)).subscribe({
    next: (e) => void seen.push(e.type),
    error: (e: unknown) => void seen.push(`error: ${String(e)}`),
    complete: () => void seen.push('complete'),
  });
  const req = await server.request(n);
  sub.unsubscribe();
  expect(signals.at(-1)?.aborted).toBe(true); // the fetch was aborted before unsubscribe() returned
  expect(await closedSoon(req)).toBe(true);
  expect(req.finished).toBe(false);
  // Real clock on purpose: a late abort error would come from the SDK's fetch over a real socket.
  await new Promise((r) => setTimeout(r, 20));
  return seen;
}

describe('unsubscribe aborts the request: the server sees the socket close', () => {
  it('streaming, stalled before headers and after headers', async () => {
    const { provider, signals } = watched();
    expect(await cancelWhileServing(provider, signals, true, { stall: true, sendHeaders: false })).toEqual([]);
    expect(await cancelWhileServing(provider, signals, true, { stall: true })).toEqual([]);
  });

  it('non-streaming, before headers', async () => {
    const { provider, signals } = watched();
    expect(await cancelWhileServing(provider, signals, false, { stall: true, sendHeaders: false })).toEqual([]);
  });

  it('mid-stream: take(2) of an open stream stops reading and closes the socket', async () => {
    const frame = (text: string) =>
      `data: ${JSON.stringify({ candidates: [{ content: { parts: [{ text }] } }] })}\r\n\r\n`;
    server.enqueue({ sse: [frame('Hello'), frame(' from')], hold: true }); // open, never finished
    const n = server.requests.length;
    const provider = gemini({ model: 'm', apiKey: 'k', baseURL: server.url });
    const events = await firstValueFrom(provider.call(request(true)).pipe(take(2), toArray()));
    expect(events).toEqual([
      { type: 'text_delta', delta: 'Hello' },
      { type: 'text_delta', delta: ' from' },
    ]);
    const req = await server.request(n);
    expect(await closedSoon(req)).toBe(true);
    expect(req.finished).toBe(false);
  });

  it('unsubscribing synchronously from a handler stops further events', async () => {
    server.enqueue({ fixture: 'text.sse' });
    const n = server.requests.length;
    const seen: ModelEvent[] = [];
    const sub = gemini({ model: 'm', apiKey: 'k', baseURL: server.url })
      .call(request(true))
      .subscribe((e) => {
        seen.push(e);
        sub.unsubscribe();
      });
    const req = await server.request(n);
    await req.whenClosed;
    await new Promise((r) => setTimeout(r, 20)); // real socket: see cancelWhileServing
    expect(seen).toEqual([{ type: 'text_delta', delta: 'Hello' }]);
  });

  it('unsubscribing in the same tick as subscribe sends nothing', async () => {
    const n = server.requests.length;
    gemini({ model: 'm', apiKey: 'k', baseURL: server.url }).call(request(true)).subscribe().unsubscribe();
    await new Promise((r) => setTimeout(r, 50)); // a request would travel a real socket: real clock
    expect(server.requests.length).toBe(n);
  });

  it('the Observable is cold: each subscription sends its own request', async () => {
    server.enqueue({ fixture: 'generate-content.json' }, { fixture: 'generate-content.json' });
    const call = gemini({ model: 'm', apiKey: 'k', baseURL: server.url }).call(request(false));
    const n = server.requests.length;
    const [a, b] = await Promise.all([collect<ModelEvent>(call), collect<ModelEvent>(call)]);
    expect(server.requests.length).toBe(n + 2);
    expect([a.completed, b.completed]).toEqual([true, true]);
  });
});

describe('cancel of a run at each checkpoint of a Gemini call', () => {
  type Checkpoint = { name: string; stream: boolean; answers: GeminiScript[]; when?: (e: RunEvent) => boolean };
  const firstDelta = (e: RunEvent) => e.type === 'text_delta';
  const checkpoints: Checkpoint[] = [
    { name: 'waiting for headers (stream)', stream: true, answers: [{ stall: true, sendHeaders: false }] },
    { name: 'waiting for the first chunk', stream: true, answers: [{ stall: true }] },
    {
      name: 'between chunks',
      stream: true,
      answers: [
        {
          sse: [`data: ${JSON.stringify({ candidates: [{ content: { parts: [{ text: 'a' }] } }] })}\r\n\r\n`],
          hold: true,
        },
      ],
      when: firstDelta,
    },
    { name: 'waiting for a non-streamed answer', stream: false, answers: [{ stall: true, sendHeaders: false }] },
    {
      name: 'during the rescue of a cut stream',
      stream: true,
      answers: [
        { fixture: 'text.sse', cutAfter: 1 },
        { stall: true, sendHeaders: false },
      ],
      when: (e) => e.type === 'model_request_started' && (e as { cause?: string }).cause === 'rescue',
    },
  ];

  for (const point of checkpoints) {
    it(`${point.name}: run_cancelled and the fetch abort before cancel() returns, the socket closes`, async () => {
      const { provider, signals } = watched();
      const agent = defineAgent({ name: 'g', instructions: '', model: provider });
      server.enqueue(...point.answers);
      const n = server.requests.length;
      const cancel = new CancelSignal();
      const events: RunEvent[] = [];
      let reached!: () => void;
      const atCheckpoint = new Promise<void>((resolve) => (reached = resolve));
      run(agent, 'hi', { cancel, stream: point.stream }).subscribe((e) => {
        events.push(e);
        if (point.when?.(e)) reached();
      });
      const last = n + point.answers.length - 1;
      const req = await server.request(last);
      // without an event to wait for, the request reaching the server is the checkpoint
      if (point.when) await atCheckpoint;
      cancel.cancel('user stop');
      expect(events.at(-1)).toMatchObject({ type: 'run_cancelled', reason: 'user stop' });
      expect(signals.at(-1)?.aborted).toBe(true);
      expect(await closedSoon(req)).toBe(true);
      expect(req.finished).toBe(false);
      const count = events.length;
      await new Promise((r) => setTimeout(r, 20)); // real socket: a late event would show here
      expect(events.length).toBe(count);
    });
  }
});

describe('no leaks', () => {
  const tcpSockets = () => process.getActiveResourcesInfo().filter((r) => r === 'TCPSocketWrap').length;

  it('100 sequential calls leave no sockets beyond the keep-alive pool', async () => {
    const provider = gemini({ model: 'm', apiKey: 'k', baseURL: server.url });
    server.enqueue({ fixture: 'text.sse' });
    await collect(provider.call(request(true))); // warm the pool
    const before = tcpSockets();
    for (let i = 0; i < 100; i++) {
      server.enqueue(i % 2 ? { fixture: 'text.sse' } : { fixture: 'generate-content.json' });
      const { completed } = await collect(provider.call(request(i % 2 === 1)));
      expect(completed).toBe(true);
    }
    expect(tcpSockets() - before).toBeLessThanOrEqual(4);
  });

  it('cancelled calls release their sockets', async () => {
    const { provider, signals } = watched();
    const before = tcpSockets();
    for (let i = 0; i < 20; i++) await cancelWhileServing(provider, signals, true, { stall: true });
    let after = tcpSockets();
    for (let i = 0; i < 100 && after - before > 4; i++) {
      await new Promise((r) => setTimeout(r, 20));
      after = tcpSockets();
    }
    expect(after - before).toBeLessThanOrEqual(4);
  });
});
