/**
 * An input guardrail that trips while the main model streams, over a real socket: the engine ends the run in the
 * guardrail's own settlement callback, so the model request's fetch is aborted and the terminal event is delivered
 * before any later continuation of the guardrail's promise runs (the subscriber's own `then` on it included), and
 * the local server sees the socket close with the response unfinished.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { anthropicMessages } from '../src/anthropic/index.js';
import { defineAgent, run, type GuardrailVerdict, type RunEvent } from '../src/index.js';
import { anthropicTextStream, startAnthropicServer, type AnthropicServer } from './support/anthropic-server.js';

let server: AnthropicServer;
beforeAll(async () => void (server = await startAnthropicServer()));
afterAll(() => server.close());

/** Resolves true when the request closes within 2 s ("it happened", not a timing assertion). */
const closedSoon = (req: { whenClosed: Promise<void> }) =>
  Promise.race([req.whenClosed.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), 2000))]);

it('a trip mid-stream aborts the request and ends the run before the guardrail promise settles to the subscriber', async () => {
  // The first frames of an answer, then the response stays open and silent.
  const head = (anthropicTextStream('Hello') as { sse: readonly string[] }).sse.slice(0, 3);
  server.enqueue({ sse: head, hold: true });
  const n = server.requests.length;
  const model = anthropicMessages({ model: 'claude-test', apiKey: 'k', baseURL: server.baseURL });
  let trip!: (v: GuardrailVerdict) => void;
  const verdict = new Promise<GuardrailVerdict>((resolve) => (trip = resolve));
  const agent = defineAgent({
    name: 'a',
    instructions: '',
    model,
    guardrails: {
      input: [
        {
          name: 'topic',
          check: () => verdict,
        },
      ],
    },
  });
  const order: string[] = [];
  const events: RunEvent[] = [];
  let streaming!: () => void;
  const midStream = new Promise<void>((resolve) => (streaming = resolve));
  const done = new Promise<void>((resolve) =>
    run(agent, 'hi').subscribe({
      next: (e) => {
        events.push(e);
        if (e.type === 'text_delta') {
          order.push('text_delta');
          streaming();
        }
        if (e.type === 'run_failed') order.push(`terminal ${e.stopReason}`);
      },
      complete: resolve,
    }),
  );
  const req = await server.request(n);
  await midStream; // the streamed text reached the subscriber: the model is mid-stream
  trip({ tripwire: true, output: 'refused' });
  await verdict; // the subscriber's continuation of the guardrail's promise
  order.push('guardrail promise settled');
  expect(order).toEqual(['text_delta', 'terminal guardrail', 'guardrail promise settled']);
  expect(await closedSoon(req)).toBe(true);
  expect(req.finished).toBe(false);
  await done;
  expect(events.at(-1)).toMatchObject({ type: 'run_failed', stopReason: 'guardrail' });
  expect(server.requests.length).toBe(n + 1); // nothing was sent after the trip
});
