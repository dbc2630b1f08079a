import { HttpAgent, type AgentSubscriber } from '@ag-ui/client';
import type { AGUIEvent } from '@ag-ui/core';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineAgent, localRuns, tool, type Item, type RunEvent } from '../src/index.js';
import { DISCONNECTED_REASON, createHandler } from '../src/http/index.js';
import { collectEvents, gate, scriptedModel, type ScriptedStep } from '../src/testing/index.js';
import { checkAgUiStream } from './support/ag-ui.js';
import { bearer, listen, type Listening } from './support/http.js';

/**
 * @ag-ui/client's own HttpAgent (RxJS, the client CopilotKit-style front ends use) against the handler: a
 * conversation of several runs on one thread, tool calls, and abortRun().
 */

let server: Listening | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const echo = tool({
  name: 'echo',
  description: 'echo',
  parameters: z.object({ x: z.string() }),
  execute: ({ x }) => `echo ${x}`,
});

async function setup(steps: (ScriptedStep | string)[], disconnect: 'continue' | 'cancel' = 'continue') {
  const model = scriptedModel(steps);
  const runs = localRuns({
    agents: { helper: defineAgent({ name: 'helper', instructions: 'i', model, tools: [echo] }) },
  });
  server = await listen(createHandler({ runs, authorize: bearer, disconnect }));
  const agent = new HttpAgent({
    url: `${server.url}/agents/helper/runs`,
    headers: { authorization: 'Bearer alice' },
    threadId: 'chat-1',
  });
  return { model, runs, agent };
}

/** A subscriber that records every event HttpAgent applied. */
function recorder() {
  const events: AGUIEvent[] = [];
  const subscriber: AgentSubscriber = { onEvent: ({ event }) => void events.push(event as AGUIEvent) };
  return { events, subscriber };
}

const shape = (items: readonly Item[]) =>
  items.map((i) => (i.type === 'tool_result' ? `tool:${i.output}` : `${i.type}:${i.text}`));

describe('HttpAgent against loopctl/http', () => {
  it('a conversation: each run streams answer and tool calls; the next request has the history once', async () => {
    const { agent, model } = await setup([
      { text: ['Let me ', 'look.'], toolCalls: [{ name: 'echo', arguments: { x: 'a' }, callId: 'c1' }] },
      { text: ['Found ', 'it.'] },
      { text: ['You ', 'are welcome.'] },
    ]);
    agent.addMessage({ id: 'u1', role: 'user', content: 'Find it.' });
    const first = recorder();
    const r1 = await agent.runAgent({}, first.subscriber);
    await checkAgUiStream(first.events);
    expect(first.events.map((e) => e.type)).toEqual([
      'RUN_STARTED',
      'STEP_STARTED',
      'TEXT_MESSAGE_START',
      'TEXT_MESSAGE_CONTENT',
      'TEXT_MESSAGE_CONTENT',
      'TEXT_MESSAGE_END',
      'TOOL_CALL_START',
      'TOOL_CALL_ARGS',
      'TOOL_CALL_END',
      'TOOL_CALL_RESULT',
      'STEP_FINISHED',
      'STEP_STARTED',
      'TEXT_MESSAGE_START',
      'TEXT_MESSAGE_CONTENT',
      'TEXT_MESSAGE_CONTENT',
      'TEXT_MESSAGE_END',
      'STEP_FINISHED',
      'RUN_FINISHED',
    ]);
    expect(r1.result).toEqual({ output: 'Found it.', finishReason: 'stop', undelivered: [] });
    expect(agent.messages.map((m) => [m.role, 'content' in m ? m.content : undefined])).toEqual([
      ['user', 'Find it.'],
      ['assistant', 'Let me look.'],
      ['tool', 'echo a'],
      ['assistant', 'Found it.'],
    ]);
    expect(agent.messages[1]).toMatchObject({
      toolCalls: [{ id: 'c1', function: { name: 'echo', arguments: '{"x":"a"}' } }],
    });

    agent.addMessage({ id: 'u2', role: 'user', content: 'Thanks!' });
    const r2 = await agent.runAgent();
    expect(r2.newMessages.map((m) => m.role)).toEqual(['assistant']);
    // The server's session holds the first run; the client's copies of its messages are not taken again.
    expect(shape(model.requests[2]!.items)).toEqual([
      'user:Find it.',
      'assistant:Let me look.',
      'tool:echo a',
      'assistant:Found it.',
      'user:Thanks!',
    ]);
  });

  it("abortRun() closes the stream; with disconnect 'cancel' the server's run is cancelled", async () => {
    const hold = gate();
    const { agent, runs } = await setup([{ text: ['Thinking'], hold: hold.wait$ }], 'cancel');
    agent.addMessage({ id: 'u1', role: 'user', content: 'Go.' });
    const seen = recorder();
    let runId = '';
    const started = new Promise<void>((resolve) => {
      seen.subscriber.onTextMessageContentEvent = () => resolve();
      seen.subscriber.onRunStartedEvent = ({ event }) => void (runId = event.runId);
    });
    const running = agent.runAgent({}, seen.subscriber);
    await started;
    agent.abortRun();
    await running; // an abort is not an error for HttpAgent
    const events: RunEvent[] = await collectEvents(runs.events(runId, { principal: 'alice' }));
    expect(events.at(-1)).toMatchObject({ type: 'run_cancelled', phase: 'model_stream' });
    expect((events.at(-1) as { reason: unknown }).reason).toBe(DISCONNECTED_REASON);
    // What the server sent, then the client's own RUN_ERROR for its abort.
    expect(seen.events.map((e) => e.type)).toEqual([
      'RUN_STARTED',
      'STEP_STARTED',
      'TEXT_MESSAGE_START',
      'TEXT_MESSAGE_CONTENT',
      'RUN_ERROR',
    ]);
    expect(seen.events.at(-1)).toMatchObject({ code: 'abort' });
  });

  it("abortRun() with disconnect 'continue': the run completes; the next run's history has it once", async () => {
    const hold = gate();
    const { agent, runs, model } = await setup([{ text: ['Thinking'], hold: hold.wait$ }, 'Next answer.'], 'continue');
    agent.addMessage({ id: 'u1', role: 'user', content: 'Go.' });
    let runId = '';
    const started = new Promise<void>((resolve) => {
      void agent.runAgent(
        {},
        {
          onRunStartedEvent: ({ event }) => {
            runId = event.runId;
            resolve();
          },
        },
      );
    });
    await started;
    agent.abortRun();
    hold.open();
    const events = await collectEvents(runs.events(runId, { principal: 'alice' }));
    expect(events.at(-1)).toMatchObject({ type: 'run_completed', output: 'Thinking' });
    agent.addMessage({ id: 'u2', role: 'user', content: 'And now?' });
    const again = new HttpAgent({
      url: `${server!.url}/agents/helper/runs`,
      headers: { authorization: 'Bearer alice' },
      threadId: 'chat-1',
    });
    again.setMessages(agent.messages);
    const r = await again.runAgent();
    expect(r.result).toMatchObject({ output: 'Next answer.' });
    expect(shape(model.requests[1]!.items)).toEqual(['user:Go.', 'assistant:Thinking', 'user:And now?']);
  });
});
