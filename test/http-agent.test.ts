import { getEventListeners } from 'node:events';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { CancelSignal, defineAgent, openaiChat, run, tool, type RunEvent, type TerminalEvent } from '../src/index.js';
import { collectEvents } from '../src/testing/index.js';
import {
  SSE_DONE,
  chatChunk,
  chatCompletion,
  sseData,
  startOpenAIServer,
  type OpenAIServer,
} from './support/openai-server.js';
import { virtualTime } from './support/virtual-time.js';

let server: OpenAIServer;
beforeEach(async () => {
  server = await startOpenAIServer();
});
afterEach(async () => {
  await server.close();
});

/** Resolves when `p` does, or rejects after a generous bound (it happened, not how fast). */
const within = <T>(p: Promise<T>, ms = 5_000) =>
  Promise.race([p, new Promise<never>((_r, rej) => setTimeout(() => rej(new Error(`not within ${ms} ms`)), ms))]);

const chat = (stream = true) =>
  openaiChat({ model: 'gpt-4o-mini', baseURL: server.baseURL, apiKey: 'test-key', stream });
const last = (events: RunEvent[]) => events.at(-1) as TerminalEvent;

describe('a whole agent run on recorded streams', () => {
  it('tool call (recorded) → real tool → final text (recorded)', async () => {
    server.enqueue({ fixture: 'chat-tool-call-capital-usage.sse' }, { fixture: 'chat-text-usage.sse' });
    const calls: unknown[] = [];
    const getCapital = tool({
      name: 'get_capital',
      description: 'The capital of a country',
      parameters: z.object({ country: z.string() }),
      execute: ({ country }) => (calls.push(country), country === 'UK' ? 'London' : 'unknown'),
    });
    const agent = defineAgent({ name: 'geo', instructions: 'Answer briefly.', model: chat(), tools: [getCapital] });
    const events = await collectEvents(run(agent, 'What is the capital of the UK?'));
    expect(calls).toEqual(['UK']);
    expect(last(events)).toMatchObject({
      type: 'run_completed',
      output: 'The capital of the UK is London.',
      finishReason: 'stop',
    });
    expect(last(events).usage).toEqual({
      inputTokens: 53 + 78,
      outputTokens: 15 + 9,
      totalTokens: 68 + 87,
      reported: true,
    });
    const second = server.requests[1]!.body;
    expect(second.messages.at(-1)).toEqual({
      role: 'tool',
      tool_call_id: 'call_ZR5UUuTt3pf61kjwAJIYdVMj',
      content: 'London',
    });
    expect(second.messages.at(-2)).toMatchObject({
      role: 'assistant',
      tool_calls: [
        { id: 'call_ZR5UUuTt3pf61kjwAJIYdVMj', function: { name: 'get_capital', arguments: '{"country":"UK"}' } },
      ],
    });
  });
});

describe('cancel over real sockets (checkpoints 2 and 3)', () => {
  for (const stream of [true, false]) {
    it(`${stream ? 'mid-stream' : 'mid non-streaming request'}: run_cancelled before cancel() returns, the server sees the socket close`, async () => {
      if (stream)
        server.enqueue({
          sse: [sseData(chatChunk({ role: 'assistant', content: 'Hel' })), sseData(chatChunk({ content: 'lo' }))],
          hold: true,
        });
      else server.enqueue({ stall: true, sendHeaders: false });
      const agent = defineAgent({ name: 'a', instructions: '', model: chat(stream) });
      const cancel = new CancelSignal();
      const events: RunEvent[] = [];
      // Both held frames delivered ("Hel" + "lo"): the stream then stalls (hold), and the cancel lands mid-stream.
      let streamed!: () => void;
      const bothDeltas = new Promise<void>((resolve) => (streamed = resolve));
      let text = '';
      run(agent, 'hi', { cancel }).subscribe((e) => {
        events.push(e);
        if (e.type === 'text_delta' && (text += e.delta) === 'Hello') streamed();
      });
      const req = await within(server.request(0));
      if (stream) await within(bothDeltas);
      cancel.cancel('user stop');
      expect(last(events)).toMatchObject({
        type: 'run_cancelled',
        reason: 'user stop',
        phase: stream ? 'model_stream' : 'model_request',
      });
      await within(req.whenClosed);
      expect(req.finished).toBe(false);
      if (stream) {
        const terminal = last(events);
        if (terminal.type !== 'run_cancelled') throw new Error('unreachable');
        expect(terminal.partial.at(-1)).toMatchObject({ type: 'assistant', text: 'Hello', interrupted: true });
      }
    });
  }
});

describe('recovery over HTTP', () => {
  it('a 503 with retry-after-ms then success: one retry_scheduled with that delay, two requests', async () => {
    server.enqueue(
      {
        json: { error: { message: 'overloaded', type: 'server_error' } },
        status: 503,
        headers: { 'retry-after-ms': '40' },
      },
      { fixture: 'chat-text-basic.sse' },
    );
    const agent = defineAgent({ name: 'a', instructions: '', model: chat() });
    const events = await collectEvents(run(agent, 'hi'));
    const retries = events.filter((e) => e.type === 'retry_scheduled');
    expect(retries).toHaveLength(1);
    expect(retries[0]).toMatchObject({
      attempt: 2,
      delayMs: 40,
      error: { name: 'ModelCallError', status: 503, retryable: true },
    });
    expect(server.requests).toHaveLength(2);
    expect(last(events).type).toBe('run_completed');
  });

  it('a cancel during that backoff: no second request ever reaches the server', async () => {
    server.enqueue({
      json: { error: { message: 'overloaded', type: 'server_error' } },
      status: 503,
      headers: { 'retry-after-ms': '300' },
    });
    const agent = defineAgent({ name: 'a', instructions: '', model: chat() });
    const cancel = new CancelSignal();
    const events: RunEvent[] = [];
    let ended!: () => void;
    const cancelled = new Promise<void>((resolve) => (ended = resolve));
    run(agent, 'hi', { cancel }).subscribe((e) => {
      events.push(e);
      // A turn of the event loop after the backoff began (its 300 ms timer is set), not a clock.
      if (e.type === 'retry_scheduled') setImmediate(() => cancel.cancel('stop during backoff'));
      if (e.type === 'run_cancelled') ended();
    });
    await within(cancelled);
    expect(last(events)).toMatchObject({ type: 'run_cancelled', phase: 'backoff' });
    // Real clock on purpose: a second request would reach the server over a real socket, which a virtual scheduler
    // cannot drive (the virtual-time version of this check is in recovery-cancel-during-backoff.test.ts).
    await new Promise((r) => setTimeout(r, 400));
    expect(events.filter((e) => e.type === 'model_request_started')).toHaveLength(1);
    expect(server.requests).toHaveLength(1);
  });

  it('a stream cut mid-way is rescued by a non-streaming request', async () => {
    server.enqueue(
      {
        sse: [sseData(chatChunk({ role: 'assistant', content: 'partial ' })), sseData(chatChunk({ content: 'text' }))],
        cutAfter: 2,
      },
      { json: chatCompletion({ content: 'full answer' }) },
    );
    const agent = defineAgent({ name: 'a', instructions: '', model: chat() });
    const events = await collectEvents(run(agent, 'hi', { retry: false }));
    expect(server.requests.map((r) => r.body.stream)).toEqual([true, false]);
    expect(
      events
        .filter((e) => e.type === 'model_request_started')
        .map((e) => e.type === 'model_request_started' && e.stream),
    ).toEqual([true, false]);
    expect(last(events)).toMatchObject({ type: 'run_completed', output: 'full answer' });
  });

  it('an idle stall: the idle deadline fires, then a retry succeeds', async () => {
    server.enqueue({ stall: true }, { fixture: 'chat-text-basic.sse' });
    const agent = defineAgent({ name: 'a', instructions: '', model: chat() });
    // The deadlines and the backoff on a virtual clock, the network on the real one: the clock moves only while the
    // first stream stalls, so a slow machine cannot make the retry's stream look idle too.
    const vt = virtualTime();
    const events: RunEvent[] = [];
    const ended = new Promise<void>((resolve) =>
      run(agent, 'hi', {
        deadlines: { idleMs: 150 },
        retry: { maxRetries: 2, initialDelayMs: 1 },
        scheduler: vt.scheduler,
      }).subscribe({ next: (e) => events.push(e), complete: resolve }),
    );
    let done = false;
    void ended.then(() => (done = true));
    // Turns of the event loop (the network moves) with the virtual clock run to now, until `cond` holds.
    const until = async (cond: () => boolean, step = 0) => {
      while (!cond()) await (step ? vt.advance(step) : vt.idle());
    };
    await within(until(() => server.requests.length === 1));
    // 150 virtual ms at a time until the idle deadline (armed once the stalled response has begun) has fired.
    await within(until(() => events.some((e) => e.type === 'retry_scheduled'), 150));
    await vt.advance(1); // the 1 ms backoff
    await within(until(() => done));
    await within(server.requests[0]!.whenClosed);
    expect(server.requests[0]!.finished).toBe(false);
    const kinds = events
      .filter((e) => e.type === 'retry_scheduled' || e.type === 'model_request_started')
      .map((e) => e.type);
    expect(kinds).toEqual(['model_request_started', 'retry_scheduled', 'model_request_started']);
    expect(events.find((e) => e.type === 'retry_scheduled')).toMatchObject({
      error: { name: 'TimeoutError', kind: 'idle', timeoutMs: 150 },
    });
    expect(server.requests.map((r) => r.body.stream)).toEqual([true, true]);
    expect(last(events).type).toBe('run_completed');
  });
});

describe('listeners on a long-lived CancelSignal', () => {
  it('200 sequential streamed runs leave its AbortSignal listener count unchanged', async () => {
    const cancel = new CancelSignal();
    const signal = cancel.signal;
    const before = getEventListeners(signal, 'abort').length;
    const agent = defineAgent({ name: 'a', instructions: '', model: chat() });
    for (let i = 0; i < 200; i++) {
      server.enqueue({
        sse: [
          sseData(chatChunk({ role: 'assistant', content: `n${i}` })),
          sseData(chatChunk({}, { finishReason: 'stop' })),
          SSE_DONE,
        ],
      });
      const events = await collectEvents(run(agent, 'hi', { cancel, signal }));
      expect(last(events)).toMatchObject({ type: 'run_completed', output: `n${i}` });
    }
    expect(getEventListeners(signal, 'abort').length).toBe(before);
    // 200 real HTTP round trips: CPU work that a loaded 2-core machine stretches past the 20 s default. A bound for
    // a hang, not a speed check.
  }, 60_000);
});
