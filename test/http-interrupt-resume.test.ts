/**
 * AG-UI's interrupt resume over HTTP (docs/ui.md, "Resuming an interrupt"): a run suspended for approval ends
 * RUN_FINISHED with the interrupt outcome; the client's next RunAgentInput answers each interrupt in `resume`
 * and the thread's suspended run goes on, with the checks of the library's `resume()`: an unknown call, a
 * missing decision, a second resume, nothing to resume, a new message with a resume are refused and no tool
 * runs. The consumer is @ag-ui/client's HttpAgent against the handler.
 */
import { HttpAgent, type AgentSubscriber } from '@ag-ui/client';
import type { AGUIEvent } from '@ag-ui/core';
import { afterEach, describe, expect, it } from 'vitest';
import { createHandler } from '../src/http/index.js';
import { defineAgent, localRuns, type Runs } from '../src/index.js';
import { instrumentRuns } from '../src/otel/index.js';
import { scriptedModel } from '../src/testing/index.js';
import { checkAgUiStream } from './support/ag-ui.js';
import { deployTool } from './support/gated-tools.js';
import { bearer, listen, request, type Listening } from './support/http.js';

let server: Listening | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function setup(wrap: (runs: Runs) => Runs = (r) => r) {
  const executed: string[] = [];
  const deploy = deployTool(executed);
  const model = scriptedModel([
    { text: ['Deploying.'], toolCalls: [{ name: 'deploy', callId: 'call_d', arguments: { service: 'api' } }] },
    { text: ['Done: it is live.'] },
  ]);
  const agent = defineAgent({ name: 'helper', instructions: 'i', model, tools: [deploy] });
  const runs = wrap(localRuns({ agents: { helper: agent }, runOptions: { approvals: 'suspend' } }));
  server = await listen(createHandler({ runs, authorize: bearer }));
  const client = new HttpAgent({
    url: `${server.url}/agents/helper/runs`,
    headers: { authorization: 'Bearer p' },
    threadId: 't',
  });
  client.addMessage({ id: 'u1', role: 'user', content: 'Deploy the api.' });
  return { executed, model, client, url: server.url };
}

function recorder() {
  const events: AGUIEvent[] = [];
  const subscriber: AgentSubscriber = { onEvent: ({ event }) => void events.push(event as AGUIEvent) };
  return { events, subscriber };
}

/** The suspended first run: its interrupts, as HttpAgent keeps them. */
async function suspend(client: HttpAgent) {
  const first = recorder();
  await client.runAgent({}, first.subscriber);
  await checkAgUiStream(first.events);
  expect(first.events.at(-1)).toMatchObject({
    type: 'RUN_FINISHED',
    outcome: { type: 'interrupt', interrupts: [{ id: 'call_d', reason: 'tool_approval', toolCallId: 'call_d' }] },
  });
  // The interrupt names a call the client holds (declared before RUN_FINISHED, no result yet).
  const calls = client.messages.flatMap((m) => (m.role === 'assistant' ? (m.toolCalls ?? []) : []));
  expect(calls.map((c) => [c.id, c.function.arguments])).toEqual([['call_d', '{"service":"api"}']]);
  expect(client.pendingInterrupts.map((i) => i.id)).toEqual(['call_d']);
}

const body = (resume: unknown[], messages = [{ id: 'u1', role: 'user', content: 'Deploy the api.' }]) => ({
  threadId: 't',
  runId: 'client-run',
  state: {},
  messages,
  tools: [],
  context: [],
  forwardedProps: {},
  resume,
});

describe('RunAgentInput.resume over HTTP (HttpAgent)', () => {
  it('approved: a new run goes on where the suspended one stopped; the call runs once, the run completes', async () => {
    const { client, executed, model } = await setup();
    await suspend(client);
    expect(executed).toEqual([]);
    const second = recorder();
    const result = await client.runAgent(
      { resume: [{ interruptId: 'call_d', status: 'resolved', payload: { approve: true } }] },
      second.subscriber,
    );
    await checkAgUiStream(second.events);
    expect(executed).toEqual(['api']);
    expect(result.result).toMatchObject({ output: 'Done: it is live.' });
    const deployResult = second.events.find((e) => e.type === 'TOOL_CALL_RESULT' && e.toolCallId === 'call_d');
    expect(deployResult).toMatchObject({ content: 'deployed api' });
    expect(client.pendingInterrupts).toEqual([]);
    // The model's second request is the suspended run's history plus the call's result.
    expect(model.requests[1]!.items.map((i) => i.type)).toEqual(['user', 'assistant', 'tool_result']);
  });

  it('rejected with a reason (and a cancelled interrupt): the call never runs; the model reads why', async () => {
    for (const [entry, reason] of [
      [{ interruptId: 'call_d', status: 'resolved', payload: { approve: false, reason: 'not today' } }, 'not today'],
      [{ interruptId: 'call_d', status: 'cancelled' }, 'the client cancelled the interrupt'],
    ] as const) {
      const { client, executed, model } = await setup();
      await suspend(client);
      await client.runAgent({ resume: [entry] });
      expect(executed).toEqual([]);
      const read = model.requests[1]!.items.find((i) => i.type === 'tool_result');
      expect(read).toMatchObject({ isError: true, output: `Error: the call was rejected: ${reason}` });
      await server!.close();
      server = undefined;
    }
  });

  it('each refusal is typed and runs nothing: unknown call, bad payload, new message, nothing to resume', async () => {
    const { client, executed, url } = await setup();
    const post = (b: unknown) => request(`${url}/agents/helper/runs`, { principal: 'p', body: b });
    // Nothing suspended on this thread yet.
    expect(
      (await post(body([{ interruptId: 'call_d', status: 'resolved', payload: { approve: true } }]))).body,
    ).toMatchObject({ error: { field: 'resume' } });
    await suspend(client);
    const cases: [unknown, number, string, string][] = [
      [body([{ interruptId: 'nope', status: 'resolved', payload: { approve: true } }]), 400, 'unknown_call', 'resume'],
      [body([{ interruptId: 'call_d', status: 'resolved', payload: 'yes' }]), 400, 'bad_request', 'resume[0].payload'],
      [
        body(
          [{ interruptId: 'call_d', status: 'resolved', payload: { approve: true } }],
          [
            { id: 'u1', role: 'user', content: 'Deploy the api.' },
            { id: 'u2', role: 'user', content: 'And the web.' },
          ],
        ),
        400,
        'bad_request',
        'messages',
      ],
    ];
    for (const [b, status, code, field] of cases) {
      const res = await post(b);
      expect([res.status, res.body.error?.code, res.body.error?.field]).toEqual([status, code, field]);
    }
    expect(executed).toEqual([]);
    console.log(`${cases.length + 1} refused resumes, no tool run`);
  });

  it('a second resume of the same suspension is refused already_resumed (409); the call ran once', async () => {
    const { client, executed, url } = await setup();
    await suspend(client);
    await client.runAgent({ resume: [{ interruptId: 'call_d', status: 'resolved', payload: { approve: true } }] });
    const again = await request(`${url}/agents/helper/runs`, {
      principal: 'p',
      body: body([{ interruptId: 'call_d', status: 'resolved', payload: { approve: true } }]),
    });
    expect([again.status, again.body.error?.code, again.body.error?.field]).toEqual([409, 'already_resumed', 'resume']);
    expect(executed).toEqual(['api']);
  });

  it('through instrumentRuns (loopctl/otel) the resume is passed on: the call runs once', async () => {
    const { client, executed } = await setup((runs) => instrumentRuns(runs));
    await suspend(client);
    await client.runAgent({ resume: [{ interruptId: 'call_d', status: 'resolved', payload: { approve: true } }] });
    expect(executed).toEqual(['api']);
  });
});
