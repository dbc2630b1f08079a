/**
 * Cancel of an Anthropic model call: unsubscribing aborts the request and the local server sees the socket close,
 * at every point of a call (before headers, after headers, mid-stream, a non-streamed request, the rescue); through
 * the engine, the request's fetch signal is aborted before `cancel()` returns and the run ends `run_cancelled`.
 */
import Anthropic from '@anthropic-ai/sdk';
import { firstValueFrom, take, toArray } from 'rxjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { anthropicMessages } from '../src/anthropic/index.js';
import { CancelSignal } from '../src/cancel/index.js';
import { defineAgent } from '../src/engine/define-agent.js';
import { run } from '../src/engine/run.js';
import type { RunEvent } from '../src/events.js';
import type { ModelEvent, ModelProvider, ModelRequest } from '../src/model/types.js';
import {
  anthropicMessage,
  readAnthropicFixture,
  startAnthropicServer,
  type AnthropicAnswer,
  type AnthropicRequest,
  type AnthropicServer,
} from './support/anthropic-server.js';
import { collect, sseFrames } from './support/openai-server.js';

let server: AnthropicServer;
beforeAll(async () => void (server = await startAnthropicServer()));
afterAll(() => server.close());

const request = (stream: boolean): ModelRequest => ({
  instructions: '',
  items: [{ type: 'user', id: 'u', text: 'hi' }],
  tools: [],
  stream,
});
const provider = () => anthropicMessages({ model: 'claude-test', apiKey: 'k', baseURL: server.baseURL });

/** Resolves true when `req` closes within 2 s ("it happened", not a timing assertion). */
const closedSoon = (req: AnthropicRequest) =>
  Promise.race([req.whenClosed.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), 2000))]);

async function cancelWhileServing(model: ModelProvider, stream: boolean, answer: AnthropicAnswer) {
  server.enqueue(answer);
  const n = server.requests.length;
  const seen: string[] = [];
  const sub = model.call(request(stream)).subscribe({
    next: (e) => void seen.push(e.type),
    error: (e: unknown) => void seen.push(`error: ${String(e)}`),
    complete: () => void seen.push('complete'),
  });
  const req = await server.request(n);
  sub.unsubscribe();
  expect(await closedSoon(req)).toBe(true);
  expect(req.finished).toBe(false);
  // Real clock on purpose: a late abort error would come from the SDK's fetch over a real socket.
  await new Promise((r) => setTimeout(r, 20));
  return seen;
}

describe('unsubscribe aborts the request: the server sees the socket close', () => {
  it('streaming, stalled after headers and before headers', async () => {
    expect(await cancelWhileServing(provider(), true, { stall: true })).toEqual([]);
    expect(await cancelWhileServing(provider(), true, { stall: true, sendHeaders: false })).toEqual([]);
  });

  it('non-streaming, before headers and while reading the body', async () => {
    expect(await cancelWhileServing(provider(), false, { stall: true, sendHeaders: false })).toEqual([]);
    const body = { stall: true, headers: { 'content-type': 'application/json' } } as const;
    expect(await cancelWhileServing(provider(), false, body)).toEqual([]);
  });

  it('mid-stream: take(2) of a slow stream stops reading and closes the socket', async () => {
    server.enqueue({ fixture: 'text.sse', delayMs: 20 });
    const n = server.requests.length;
    const events = await firstValueFrom(provider().call(request(true)).pipe(take(2), toArray()));
    expect(events).toEqual([
      { type: 'text_delta', delta: 'Hello' },
      { type: 'text_delta', delta: ' from' },
    ]);
    const req = await server.request(n);
    expect(await closedSoon(req)).toBe(true);
    expect(req.finished).toBe(false);
  });

  it('unsubscribing in the same tick as subscribe sends nothing', async () => {
    const n = server.requests.length;
    provider().call(request(true)).subscribe().unsubscribe();
    await new Promise((r) => setTimeout(r, 50)); // a request would travel a real socket: real clock
    expect(server.requests.length).toBe(n);
  });

  it('the Observable is cold: each subscription sends its own request', async () => {
    server.enqueue(
      { json: anthropicMessage([{ type: 'text', text: 'a' }]) },
      { json: anthropicMessage([{ type: 'text', text: 'b' }]) },
    );
    const call = provider().call(request(false));
    const n = server.requests.length;
    const [a, b] = await Promise.all([collect<ModelEvent>(call), collect<ModelEvent>(call)]);
    expect(server.requests.length).toBe(n + 2);
    const texts = [a.events, b.events].map((ev) => (ev[0]?.type === 'response' ? ev[0].response.text : ''));
    expect(texts.sort()).toEqual(['a', 'b']);
  });
});

describe('cancel through the engine at every checkpoint of a model call', () => {
  /** A provider whose client records the signal of every fetch, and resolves `headers` when a response's came. */
  function watched() {
    const signals: AbortSignal[] = [];
    let headersIn!: () => void;
    const headers = new Promise<void>((resolve) => (headersIn = resolve));
    const client = new Anthropic({
      apiKey: 'k',
      baseURL: server.baseURL,
      fetch: async (url, init) => {
        if (init?.signal) signals.push(init.signal);
        const response = await fetch(url, init);
        headersIn();
        return response;
      },
    });
    return { model: anthropicMessages({ model: 'claude-test', client }), signals, headers };
  }
  const afterHeaders = 'headers in, no event yet';

  const checkpoints: [string, AnthropicAnswer[], boolean, (e: RunEvent[]) => boolean, string][] = [
    ['streamed request, before the headers', [{ stall: true, sendHeaders: false }], true, () => true, 'model_request'],
    [`streamed request, ${afterHeaders}`, [{ stall: true }], true, () => true, 'model_request'],
    [
      'mid-stream, after the first text',
      [{ sse: sseFrames(readAnthropicFixture('text.sse')).slice(0, 3), hold: true }],
      true,
      (e) => e.some((x) => x.type === 'text_delta'),
      'model_stream',
    ],
    ['non-streamed request', [{ stall: true, sendHeaders: false }], false, () => true, 'model_request'],
    [
      'the rescue after a cut stream',
      [
        { fixture: 'text.sse', cutAfter: 4 },
        { stall: true, sendHeaders: false },
      ],
      true,
      (e) => e.some((x) => x.type === 'model_request_started' && x.cause === 'rescue'),
      'rescue',
    ],
  ];
  for (const [where, answers, stream, ready, phase] of checkpoints) {
    it(`${where}: the fetch is aborted before cancel() returns; the server sees the close; run_cancelled`, async () => {
      server.enqueue(...answers);
      const n = server.requests.length;
      const { model, signals, headers } = watched();
      const cancel = new CancelSignal();
      const agent = defineAgent({ name: 'a', instructions: '', model });
      const events: RunEvent[] = [];
      let reached!: () => void;
      const isReady = new Promise<void>((resolve) => (reached = resolve));
      const done = new Promise<void>((resolve) =>
        run(agent, 'hi', { cancel, stream }).subscribe({
          next: (e) => {
            events.push(e);
            if (ready(events)) reached();
          },
          complete: resolve,
        }),
      );
      const last = await server.request(n + answers.length - 1);
      await isReady;
      if (where.includes(afterHeaders)) await headers;
      cancel.cancel('user stop');
      expect(signals.at(-1)?.aborted).toBe(true); // synchronously: before cancel() returned
      expect(await closedSoon(last)).toBe(true);
      expect(last.finished).toBe(false);
      await done;
      expect(events.at(-1)).toMatchObject({ type: 'run_cancelled', reason: 'user stop', phase });
      expect(server.requests.length).toBe(n + answers.length); // nothing was sent after the cancel
    });
  }
});

describe('no leaks', () => {
  const tcpSockets = () => process.getActiveResourcesInfo().filter((r) => r === 'TCPSocketWrap').length;

  it('100 sequential calls, streamed and not, leave no sockets beyond the keep-alive pool', async () => {
    const model = provider();
    server.enqueue({ fixture: 'text.sse' });
    await collect(model.call(request(true))); // warm the pool
    const before = tcpSockets();
    for (let i = 0; i < 100; i++) {
      server.enqueue(i % 2 ? { fixture: 'text.sse' } : { json: anthropicMessage([{ type: 'text', text: `n${i}` }]) });
      const { completed } = await collect(model.call(request(i % 2 === 1)));
      expect(completed).toBe(true);
    }
    expect(tcpSockets() - before).toBeLessThanOrEqual(4);
  });

  it('cancelled calls release their sockets', async () => {
    const model = provider();
    const before = tcpSockets();
    for (let i = 0; i < 20; i++) await cancelWhileServing(model, true, { stall: true });
    let after = tcpSockets();
    for (let i = 0; i < 100 && after - before > 4; i++) {
      await new Promise((r) => setTimeout(r, 20)); // real sockets close on their own schedule: poll, then judge
      after = tcpSockets();
    }
    expect(after - before).toBeLessThanOrEqual(4);
  });
});
