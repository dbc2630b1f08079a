import { firstValueFrom, take, toArray } from 'rxjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openaiChat, openaiResponses } from '../src/model/openai/index.js';
import type { ModelEvent, ModelProvider, ModelRequest } from '../src/model/types.js';
import {
  chatCompletion,
  collect,
  startOpenAIServer,
  type OpenAIServer,
  type RecordedRequest,
  type ScriptedResponse,
} from './support/openai-server.js';

let server: OpenAIServer;
beforeAll(async () => void (server = await startOpenAIServer()));
afterAll(() => server.close());

const request = (stream: boolean): ModelRequest => ({
  instructions: '',
  items: [{ type: 'user', id: 'u', text: 'hi' }],
  tools: [],
  stream,
});
const chat = () => openaiChat({ model: 'm', apiKey: 'k', baseURL: server.baseURL });
const responses = () => openaiResponses({ model: 'm', apiKey: 'k', baseURL: server.baseURL });

/** Resolves true when `req` closes within 10 s ("it happened", a bound for a hang, not a timing assertion). */
const closedSoon = (req: RecordedRequest) =>
  Promise.race([req.whenClosed.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), 10_000))]);

/** Subscribes, waits until the server has the request, unsubscribes; returns what the subscriber saw. */
async function cancelWhileServing(provider: ModelProvider, stream: boolean, answer: ScriptedResponse) {
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
  expect(await closedSoon(req)).toBe(true);
  expect(req.finished).toBe(false);
  // Real clock on purpose: a late abort error would come from the SDK's fetch over a real socket, which no virtual
  // scheduler drives; the same holds for the other waits in this file.
  await new Promise((r) => setTimeout(r, 20)); // give a late abort error every chance to surface
  return seen;
}

describe('unsubscribe aborts the request: the server sees the socket close', () => {
  it('chat streaming, stalled after headers', async () => {
    expect(await cancelWhileServing(chat(), true, { stall: true })).toEqual([]);
  });

  it('chat streaming, stalled before headers', async () => {
    expect(await cancelWhileServing(chat(), true, { stall: true, sendHeaders: false })).toEqual([]);
  });

  it('chat non-streaming, before headers and while reading the body', async () => {
    expect(await cancelWhileServing(chat(), false, { stall: true, sendHeaders: false })).toEqual([]);
    expect(
      await cancelWhileServing(chat(), false, { stall: true, headers: { 'content-type': 'application/json' } }),
    ).toEqual([]);
  });

  it('responses streaming and non-streaming', async () => {
    expect(await cancelWhileServing(responses(), true, { stall: true })).toEqual([]);
    expect(await cancelWhileServing(responses(), false, { stall: true, sendHeaders: false })).toEqual([]);
  });

  it('mid-stream: take(3) of a slow recording stops reading and closes the socket', async () => {
    server.enqueue({ fixture: 'chat-text-basic.sse', delayMs: 20 });
    const n = server.requests.length;
    const events = await firstValueFrom(chat().call(request(true)).pipe(take(3), toArray()));
    expect(events).toEqual([
      { type: 'text_delta', delta: 'Hi' },
      { type: 'text_delta', delta: ' there' },
      { type: 'text_delta', delta: '!' },
    ]);
    const req = await server.request(n);
    expect(await closedSoon(req)).toBe(true);
    expect(req.finished).toBe(false);
  });

  it('unsubscribing synchronously from a handler stops further events', async () => {
    server.enqueue({ fixture: 'responses-text.sse' });
    const n = server.requests.length;
    const seen: ModelEvent[] = [];
    let first!: () => void;
    const firstSeen = new Promise<void>((resolve) => (first = resolve));
    const sub = responses()
      .call(request(true))
      .subscribe((e) => {
        seen.push(e);
        sub.unsubscribe();
        first();
      });
    const req = await server.request(n);
    // The first event, however late a loaded machine delivers it; then the rest of that read and the next few
    // turns of the loop, where a later event would have to arrive (the body was handed over in one go).
    await firstSeen;
    await req.whenClosed;
    for (let i = 0; i < 3; i++) await new Promise((r) => setImmediate(r));
    expect(seen).toEqual([{ type: 'text_delta', delta: '2' }]);
  });

  it('unsubscribing in the same tick as subscribe sends nothing', async () => {
    const n = server.requests.length;
    chat().call(request(true)).subscribe().unsubscribe();
    await new Promise((r) => setTimeout(r, 50)); // a request would travel a real socket: real clock
    expect(server.requests.length).toBe(n);
  });

  it('the Observable is cold: each subscription sends its own request', async () => {
    server.enqueue({ json: chatCompletion({ content: 'a' }) }, { json: chatCompletion({ content: 'b' }) });
    const call = chat().call(request(false));
    const n = server.requests.length;
    const [a, b] = await Promise.all([collect<ModelEvent>(call), collect<ModelEvent>(call)]);
    expect(server.requests.length).toBe(n + 2);
    expect([a.events, b.events].map((ev) => (ev[0]?.type === 'response' ? ev[0].response.text : '')).sort()).toEqual([
      'a',
      'b',
    ]);
  });
});

describe('no leaks', () => {
  const tcpSockets = () => process.getActiveResourcesInfo().filter((r) => r === 'TCPSocketWrap').length;

  it('200 sequential calls leave no sockets beyond the keep-alive pool', async () => {
    const provider = chat();
    server.enqueue({ fixture: 'chat-text-usage.sse' });
    await collect(provider.call(request(true))); // warm the pool
    const before = tcpSockets();
    for (let i = 0; i < 200; i++) {
      server.enqueue(i % 2 ? { fixture: 'chat-text-usage.sse' } : { json: chatCompletion({ content: `n${i}` }) });
      const { completed } = await collect(provider.call(request(i % 2 === 1)));
      expect(completed).toBe(true);
    }
    expect(tcpSockets() - before).toBeLessThanOrEqual(4);
  });

  it('cancelled calls release their sockets', async () => {
    const provider = chat();
    const before = tcpSockets();
    for (let i = 0; i < 20; i++) await cancelWhileServing(provider, true, { stall: true });
    let after = tcpSockets();
    for (let i = 0; i < 100 && after - before > 4; i++) {
      await new Promise((r) => setTimeout(r, 20));
      after = tcpSockets();
    }
    expect(after - before).toBeLessThanOrEqual(4);
  });
});
