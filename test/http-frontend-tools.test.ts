/**
 * Front-end tools over HTTP (docs/ui.md, "Front-end tools"): the tools a client declares in
 * `RunAgentInput.tools` are offered to the model; a call to one suspends the run (RUN_FINISHED with an
 * interrupt of reason `frontend_tool` naming the call, declared with TOOL_CALL_START/ARGS/END and no
 * result), and the client's next RunAgentInput answers it in `resume` with `{ result }` (or, the protocol's
 * other way, a tool message for that call and a resume entry without payload): a new run goes on with that
 * result as the call's output. The consumer is @ag-ui/client's HttpAgent against the handler.
 */
import { HttpAgent, type AgentSubscriber } from '@ag-ui/client';
import type { AGUIEvent, Tool as AgUiTool } from '@ag-ui/core';
import { afterEach, describe, expect, it } from 'vitest';
import { createHandler } from '../src/http/index.js';
import { defineAgent, localRuns } from '../src/index.js';
import { scriptedModel } from '../src/testing/index.js';
import { checkAgUiStream } from './support/ag-ui.js';
import { deployTool } from './support/gated-tools.js';
import { bearer, listen, request, type Listening } from './support/http.js';

let server: Listening | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const PICK: AgUiTool = {
  name: 'pick_color',
  description: 'Asks the user to pick a colour.',
  parameters: { type: 'object', properties: { hint: { type: 'string' } }, required: ['hint'] },
};

async function setup(options: { approvals?: 'wait' | 'suspend' } = {}) {
  const executed: string[] = [];
  const model = scriptedModel([
    { text: ['Asking.'], toolCalls: [{ name: 'pick_color', callId: 'call_p', arguments: { hint: 'warm' } }] },
    { text: ['You picked it.'] },
  ]);
  const agent = defineAgent({ name: 'helper', instructions: 'i', model, tools: [deployTool(executed)] });
  const runs = localRuns({ agents: { helper: agent }, runOptions: options });
  server = await listen(createHandler({ runs, authorize: bearer }));
  const client = new HttpAgent({
    url: `${server.url}/agents/helper/runs`,
    headers: { authorization: 'Bearer p' },
    threadId: 't',
  });
  client.addMessage({ id: 'u1', role: 'user', content: 'Pick a colour for me.' });
  return { executed, model, client, url: server.url };
}

function recorder() {
  const events: AGUIEvent[] = [];
  const subscriber: AgentSubscriber = { onEvent: ({ event }) => void events.push(event as AGUIEvent) };
  return { events, subscriber };
}

/** The first run: the model calls the front-end tool; the run ends with its interrupt. */
async function callFrontendTool(client: HttpAgent) {
  const first = recorder();
  await client.runAgent({ tools: [PICK] }, first.subscriber);
  await checkAgUiStream(first.events);
  expect(first.events.at(-1)).toMatchObject({
    type: 'RUN_FINISHED',
    outcome: { type: 'interrupt', interrupts: [{ id: 'call_p', reason: 'frontend_tool', toolCallId: 'call_p' }] },
  });
  expect(first.events.filter((e) => e.type === 'TOOL_CALL_START').map((e) => e.toolCallName)).toEqual(['pick_color']);
  expect(first.events.some((e) => e.type === 'TOOL_CALL_RESULT')).toBe(false);
  const calls = client.messages.flatMap((m) => (m.role === 'assistant' ? (m.toolCalls ?? []) : []));
  expect(calls.map((c) => [c.id, c.function.name, c.function.arguments])).toEqual([
    ['call_p', 'pick_color', '{"hint":"warm"}'],
  ]);
  expect(client.pendingInterrupts.map((i) => i.id)).toEqual(['call_p']);
}

describe('front-end tools over HTTP (HttpAgent)', () => {
  it('are offered to the model; a call suspends the run (wait mode too); the resume result is its output', async () => {
    const { client, model, executed } = await setup();
    await callFrontendTool(client);
    // Offered with the agent's own tools, with the client's JSON Schema.
    expect(model.requests[0]!.tools.map((t) => t.name)).toEqual(['deploy', 'pick_color']);
    expect(model.requests[0]!.tools[1]).toMatchObject({ description: PICK.description, parameters: PICK.parameters });
    const second = recorder();
    const result = await client.runAgent(
      { tools: [PICK], resume: [{ interruptId: 'call_p', status: 'resolved', payload: { result: 'amber' } }] },
      second.subscriber,
    );
    await checkAgUiStream(second.events);
    expect(second.events.find((e) => e.type === 'TOOL_CALL_RESULT')).toMatchObject({
      toolCallId: 'call_p',
      content: 'amber',
    });
    expect(result.result).toMatchObject({ output: 'You picked it.' });
    expect(client.pendingInterrupts).toEqual([]);
    // The model reads the client's result; the tools stay offered after the resume.
    expect(model.requests[1]!.items.at(-1)).toMatchObject({ type: 'tool_result', callId: 'call_p', output: 'amber' });
    expect(model.requests[1]!.tools.map((t) => t.name)).toEqual(['deploy', 'pick_color']);
    expect(executed).toEqual([]);
  });

  it('a JSON result is sent as its JSON text; a tool message answers it too (resume entry without payload)', async () => {
    const a = await setup({ approvals: 'suspend' });
    await callFrontendTool(a.client);
    await a.client.runAgent({
      tools: [PICK],
      resume: [{ interruptId: 'call_p', status: 'resolved', payload: { result: { colour: 'amber' } } }],
    });
    expect(a.model.requests[1]!.items.at(-1)).toMatchObject({ output: '{"colour":"amber"}' });
    await server!.close();

    const b = await setup();
    await callFrontendTool(b.client);
    b.client.addMessage({ id: 'tool-1', role: 'tool', toolCallId: 'call_p', content: 'teal' });
    await b.client.runAgent({ tools: [PICK], resume: [{ interruptId: 'call_p', status: 'resolved' }] });
    expect(b.model.requests[1]!.items.at(-1)).toMatchObject({ type: 'tool_result', callId: 'call_p', output: 'teal' });
  });

  it('a cancelled interrupt refuses the call: the model reads why, nothing runs', async () => {
    const { client, model } = await setup();
    await callFrontendTool(client);
    await client.runAgent({ tools: [PICK], resume: [{ interruptId: 'call_p', status: 'cancelled' }] });
    expect(model.requests[1]!.items.at(-1)).toMatchObject({
      type: 'tool_result',
      isError: true,
      output: 'Error: the call was rejected: the client cancelled the interrupt',
    });
  });

  it('each refusal is a 400 naming the field: bad tools, a name of the agent, approve for a result', async () => {
    const { client, url, executed } = await setup();
    const post = (b: Record<string, unknown>) =>
      request(`${url}/agents/helper/runs`, {
        principal: 'p',
        body: {
          threadId: 't',
          runId: 'r',
          state: {},
          messages: [{ id: 'u1', role: 'user', content: 'Pick a colour for me.' }],
          tools: [],
          context: [],
          forwardedProps: {},
          ...b,
        },
      });
    const refusals: [Record<string, unknown>, string][] = [
      [{ tools: [{ name: 'no spaces', description: 'x' }] }, 'tools[0].name'],
      [{ tools: [PICK, PICK] }, 'tools[1].name'],
      [{ tools: [{ name: 'deploy', description: 'x' }] }, 'tools[0].name'],
      [{ tools: [{ name: 'x', description: 'x', parameters: 'any' }] }, 'tools[0].parameters'],
    ];
    await callFrontendTool(client);
    refusals.push(
      [
        { tools: [PICK], resume: [{ interruptId: 'call_p', status: 'resolved', payload: { approve: true } }] },
        'resume[0].payload',
      ],
      [
        { tools: [PICK], resume: [{ interruptId: 'call_p', status: 'resolved', payload: { result: undefined } }] },
        'resume[0].payload',
      ],
      [
        // A result and a rejection at once: neither is read.
        {
          tools: [PICK],
          resume: [{ interruptId: 'call_p', status: 'resolved', payload: { result: 'red', approve: false } }],
        },
        'resume[0].payload.approve',
      ],
    );
    for (const [b, field] of refusals) {
      const res = await post(b);
      expect([res.status, res.body.error?.code, res.body.error?.field], JSON.stringify(res.body)).toEqual([
        400,
        'bad_request',
        field,
      ]);
    }
    expect(executed).toEqual([]);
    console.log(`${refusals.length} refused front-end tool requests, no tool run`);
  });
});
