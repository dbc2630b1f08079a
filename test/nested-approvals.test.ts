/**
 * A sub-agent's approval is surfaced at the root ("Nested approvals", docs/run-control.md; docs/ui.md): a
 * depth-2 sub-agent's call that needs approval appears in the root's AG-UI stream as
 * `loopctl.approval_requested` with its call id and path, the HTTP decision route decides it, and its start and
 * result follow on the wire (HttpAgent over loopctl/http). Under a root in suspend mode the root suspends with
 * the nested call pending (its path in the interrupt), and a resume continues the sub-runs where they waited; a
 * sub-agent given suspend mode under a root that waits fails closed with `ToolApprovalUnavailableError`.
 */
import { HttpAgent, type AgentSubscriber } from '@ag-ui/client';
import type { AGUIEvent } from '@ag-ui/core';
import { afterEach, describe, expect, it } from 'vitest';
import { createHandler } from '../src/http/index.js';
import {
  defineAgent,
  localRuns,
  pendingCalls,
  resume,
  run,
  start,
  type RunEvent,
  type RunOptions,
  type SubRunOptions,
  type Suspended,
} from '../src/index.js';
import { collectEvents, scriptedModel } from '../src/testing/index.js';
import { checkAgUiStream } from './support/ag-ui.js';
import { deployTool } from './support/gated-tools.js';
import { bearer, listen, request, type Listening } from './support/http.js';

/** The nested deploy call's decision key (`PendingCall.id`, its interrupt id): the agent tool call ids down to it. */
const DEPLOY = 'call_research/call_ops/call_deploy';

/** lead → `research` (the researcher agent) → `ops` (the ops agent) → `deploy` (needs approval). */
function nestedAgents(opsRunOptions?: SubRunOptions<unknown>) {
  const executed: string[] = [];
  const deploy = deployTool(executed);
  const opsModel = scriptedModel([
    { toolCalls: [{ name: 'deploy', callId: 'call_deploy', arguments: { service: 'api' } }] },
    { text: 'ops: done' },
  ]);
  const ops = defineAgent({ name: 'ops', instructions: 'i', model: opsModel, tools: [deploy] });
  const researcherModel = scriptedModel([
    { toolCalls: [{ name: 'ops', callId: 'call_ops', arguments: { input: 'deploy api' } }] },
    { text: 'research: done' },
  ]);
  const researcher = defineAgent({
    name: 'researcher',
    instructions: 'i',
    model: researcherModel,
    tools: [ops.asTool({ name: 'ops', description: 'ops', ...(opsRunOptions ? { runOptions: opsRunOptions } : {}) })],
  });
  const leadModel = scriptedModel([
    { toolCalls: [{ name: 'research', callId: 'call_research', arguments: { input: 'ship it' } }] },
    { text: 'Shipped.' },
  ]);
  const lead = defineAgent({
    name: 'lead',
    instructions: 'i',
    model: leadModel,
    tools: [researcher.asTool({ name: 'research', description: 'research' })],
  });
  return { lead, executed, opsModel };
}

describe('nested approvals over HTTP (HttpAgent against loopctl/http)', () => {
  let server: Listening | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  async function runAndDecide(decision: { approve: true } | { approve: false; reason: string }) {
    const { lead, executed } = nestedAgents();
    const runs = localRuns({ agents: { lead } });
    server = await listen(createHandler({ runs, authorize: bearer }));
    const agent = new HttpAgent({
      url: `${server.url}/agents/lead/runs`,
      headers: { authorization: 'Bearer p' },
      threadId: 't',
    });
    agent.addMessage({ id: 'u1', role: 'user', content: 'Ship it.' });
    const events: AGUIEvent[] = [];
    let runId = '';
    let decided: Promise<{ status: number; body: unknown }> | undefined;
    const subscriber: AgentSubscriber = {
      onEvent: ({ event }) => void events.push(event as AGUIEvent),
      onRunStartedEvent: ({ event }) => void (runId = event.runId),
      onCustomEvent: ({ event }) => {
        if (event.name !== 'loopctl.approval_requested') return;
        const { callId } = event.value as { callId: string };
        const url = `${server!.url}/runs/${runId}/tool-calls/${encodeURIComponent(callId)}/decision`;
        decided = request(url, { body: decision, principal: 'p' });
      },
    };
    const result = await agent.runAgent({}, subscriber);
    await checkAgUiStream(events);
    return { events, executed, decided: await decided, result, agent, runs, runId };
  }

  it('a depth-2 approval is shown with its call id and path, decided by the route, and its result follows', async () => {
    const { events, executed, decided, result, agent } = await runAndDecide({ approve: true });
    const asked = events.filter((e) => e.type === 'CUSTOM' && e.name === 'loopctl.approval_requested');
    expect(asked.map((e) => (e as { value: unknown }).value)).toEqual([
      { callId: 'call_deploy', name: 'deploy', arguments: '{"service":"api"}', path: ['research', 'ops'] },
    ]);
    expect(decided).toMatchObject({ status: 200, body: { decided: true } });
    expect(executed).toEqual(['api']);
    // The surfaced call's start and result, marked with its path, after the request and before the run's end.
    const mine = events.filter((e) => 'toolCallId' in e && e.toolCallId === 'call_deploy');
    expect(mine.map((e) => e.type)).toEqual(['TOOL_CALL_START', 'TOOL_CALL_ARGS', 'TOOL_CALL_END', 'TOOL_CALL_RESULT']);
    expect(mine[0]).toMatchObject({ toolCallName: 'deploy', metadata: { loopctl: { path: ['research', 'ops'] } } });
    expect(mine[3]).toMatchObject({ content: 'deployed api', metadata: { loopctl: { path: ['research', 'ops'] } } });
    expect(result.result).toMatchObject({ output: 'Shipped.' });
    // No call is left open in the client (a success outcome would list it as pending).
    const calls = agent.messages.flatMap((m) => (m.role === 'assistant' ? (m.toolCalls ?? []) : []));
    const answered = new Set(agent.messages.flatMap((m) => (m.role === 'tool' ? [m.toolCallId] : [])));
    expect(calls.map((c) => c.id).sort()).toEqual(['call_deploy', 'call_research']);
    expect(calls.every((c) => answered.has(c.id))).toBe(true);
  });

  it('rejected through the route: the nested call never runs; its result carries outcome rejected and the path', async () => {
    const { events, executed, decided } = await runAndDecide({ approve: false, reason: 'not on Friday' });
    expect(decided).toMatchObject({ status: 200, body: { decided: true } });
    expect(executed).toEqual([]);
    const result = events.find((e) => e.type === 'TOOL_CALL_RESULT' && e.toolCallId === 'call_deploy');
    expect(result).toMatchObject({
      content: 'the call was rejected: not on Friday',
      metadata: { loopctl: { outcome: 'rejected', path: ['research', 'ops'] } },
    });
  });

  it('a decision for a nested call that no longer waits answers decided: false', async () => {
    const { runId } = await runAndDecide({ approve: true });
    const late = await request(`${server!.url}/runs/${runId}/tool-calls/call_deploy/decision`, {
      body: { approve: true },
      principal: 'p',
    });
    expect(late).toMatchObject({ status: 200, body: { decided: false } });
  });
});

describe('nested approvals under a root in suspend mode: the root suspends, resume continues the sub-runs', () => {
  let server: Listening | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });
  const suspendRoot = async () => {
    const nested = nestedAgents();
    const handle = start(nested.lead, 'Ship it.', { approvals: 'suspend' });
    const events: RunEvent[] = [];
    handle.events$.subscribe((e) => events.push(e));
    const first = await handle.result;
    return { ...nested, first, events };
  };

  it('depth 2: the root suspends with the nested call pending (path), nothing ran; approve → it runs once', async () => {
    const { lead, executed, opsModel, first, events } = await suspendRoot();
    expect(first.stopReason).toBe('needs_approval');
    expect(executed).toEqual([]);
    // The request reached the root with its path; the root's own batch has no pending call of its own.
    const asked = events.find((e) => e.type === 'subrun_event' && e.event.type === 'tool_approval_requested');
    expect(asked).toMatchObject({ path: ['research', 'ops'], event: { callId: 'call_deploy' } });
    const saved = JSON.parse(JSON.stringify(first.suspended)) as Suspended;
    expect(saved.pending).toEqual([]);
    expect(pendingCalls(saved)).toEqual([
      {
        id: 'call_research/call_ops/call_deploy',
        callId: 'call_deploy',
        name: 'deploy',
        arguments: '{"service":"api"}',
        path: ['research', 'ops'],
      },
    ]);
    expect(() => resume(lead, saved, {})).toThrow(expect.objectContaining({ code: 'missing_decision' }));
    expect(() => resume(lead, saved, { nope: { approve: true } })).toThrow(
      expect.objectContaining({ code: 'unknown_call' }),
    );
    const resumed = await resume(lead, saved, { [DEPLOY]: { approve: true } }).result;
    expect(resumed.output).toBe('Shipped.');
    expect(executed).toEqual(['api']);
    // The ops sub-run went on where it waited: its model's second request holds the deploy result.
    expect(opsModel.requests).toHaveLength(2);
    expect(opsModel.requests[1]!.items.at(-1)).toMatchObject({ type: 'tool_result', callId: 'call_deploy' });
    // A second resume of the same suspension is refused (in this process): the call never runs twice.
    expect(() => resume(lead, saved, { [DEPLOY]: { approve: true } })).toThrow(
      expect.objectContaining({ code: 'already_resumed' }),
    );
    expect(executed).toEqual(['api']);
  });

  it('the nested suspension is sealed with the root: a changed nested call is refused tampered, nothing runs', async () => {
    const { lead, executed, first } = await suspendRoot();
    const text = JSON.stringify(first.suspended).replace('{\\"service\\":\\"api\\"}', '{\\"service\\":\\"db\\"}');
    expect(text).toContain('db');
    const changed = JSON.parse(text) as Suspended;
    expect(() => resume(lead, changed, { [DEPLOY]: { approve: true } })).toThrow(
      expect.objectContaining({ code: 'tampered' }),
    );
    expect(executed).toEqual([]);
  });

  it('depth 2 rejected on resume: the nested call never runs; the ops model reads the rejection', async () => {
    const { lead, executed, opsModel, first } = await suspendRoot();
    const resumed = await resume(lead, first.suspended!, { [DEPLOY]: { approve: false, reason: 'not today' } }).result;
    expect(resumed.output).toBe('Shipped.');
    expect(executed).toEqual([]);
    expect(opsModel.requests[1]!.items.at(-1)).toMatchObject({
      isError: true,
      output: 'Error: the call was rejected: not today',
    });
  });

  it('over HTTP (HttpAgent): the interrupt names the nested call and its path; resume completes the run', async () => {
    const { lead, executed } = nestedAgents();
    const runs = localRuns({ agents: { lead }, runOptions: { approvals: 'suspend' } });
    server = await listen(createHandler({ runs, authorize: bearer }));
    const client = new HttpAgent({ url: `${server.url}/agents/lead/runs`, headers: { authorization: 'Bearer p' } });
    client.addMessage({ id: 'u1', role: 'user', content: 'Ship it.' });
    const first: AGUIEvent[] = [];
    await client.runAgent({}, { onEvent: ({ event }) => void first.push(event as AGUIEvent) });
    await checkAgUiStream(first);
    expect(first.at(-1)).toMatchObject({
      type: 'RUN_FINISHED',
      outcome: {
        type: 'interrupt',
        interrupts: [
          { id: DEPLOY, reason: 'tool_approval', metadata: { path: ['research', 'ops'], callId: 'call_deploy' } },
        ],
      },
    });
    const second: AGUIEvent[] = [];
    const result = await client.runAgent(
      { resume: [{ interruptId: DEPLOY, status: 'resolved', payload: { approve: true } }] },
      { onEvent: ({ event }) => void second.push(event as AGUIEvent) },
    );
    await checkAgUiStream(second);
    expect(result.result).toMatchObject({ output: 'Shipped.' });
    expect(executed).toEqual(['api']);
  });
});

describe("a sub-agent given approvals: 'suspend' under a root that waits: the nested call fails closed at once", () => {
  const failedDeploy = (events: readonly RunEvent[]) =>
    events.flatMap((e) =>
      e.type === 'subrun_event' && e.event.type === 'tool_call_failed' && e.event.callId === 'call_deploy'
        ? [{ path: e.path, event: e.event }]
        : [],
    );

  for (const [where, options, sub] of [
    ["the sub-agent's own runOptions approvals: 'suspend'", {}, { approvals: 'suspend' }],
  ] as const) {
    it(`${where}: ToolApprovalUnavailableError the sub-agent's model reads; nothing waits, nothing runs`, async () => {
      const { lead, executed, opsModel } = nestedAgents(sub as SubRunOptions<unknown> | undefined);
      const events = await collectEvents(run(lead, 'Ship it.', options as RunOptions));
      expect(executed).toEqual([]);
      // No approval was asked for: nobody could answer it.
      expect(events.some((e) => e.type === 'subrun_event' && e.event.type === 'tool_approval_requested')).toBe(false);
      const [failed] = failedDeploy(events);
      expect(failed?.path).toEqual(['research', 'ops']);
      expect(failed?.event).toMatchObject({
        interrupted: false,
        error: { name: 'ToolApprovalUnavailableError', toolName: 'deploy', callId: 'call_deploy' },
      });
      expect(failed?.event).not.toHaveProperty('outcome');
      // The ops agent's model read why the call did not run, and the run went on to its end.
      const read = opsModel.requests[1]!.items.find((i) => i.type === 'tool_result');
      expect(read).toMatchObject({ isError: true });
      expect((read as { output: string }).output).toContain('needs approval, which this sub-agent cannot wait for');
      expect((read as { output: string }).output).toContain('the call did not run');
      expect(events.at(-1)).toMatchObject({ type: 'run_completed', stopReason: 'completed', output: 'Shipped.' });
    });
  }
});

describe('sibling sub-runs whose pending calls share a call id: each is decided under its own path-qualified id', () => {
  let server: Listening | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  /**
   * The root calls the `ops` agent tool twice in one batch (`outer_1`, `outer_2`); each sub-run's gated call is
   * `call_0` (as servers that number calls per response give), one deploying staging, the other production.
   */
  function siblings() {
    const executed: string[] = [];
    const opsModel = scriptedModel([
      { toolCalls: [{ name: 'deploy', callId: 'call_0', arguments: { service: 'staging' } }] },
      { toolCalls: [{ name: 'deploy', callId: 'call_0', arguments: { service: 'production' } }] },
      { text: 'ops: done' },
      { text: 'ops: done' },
    ]);
    const ops = defineAgent({ name: 'ops', instructions: 'i', model: opsModel, tools: [deployTool(executed)] });
    const rootModel = scriptedModel([
      {
        toolCalls: [
          { name: 'ops', callId: 'outer_1', arguments: { input: 'staging' } },
          { name: 'ops', callId: 'outer_2', arguments: { input: 'production' } },
        ],
      },
      { text: 'Shipped.' },
    ]);
    const ops$ = ops.asTool({ name: 'ops', description: 'ops' });
    const root = defineAgent({ name: 'root', instructions: 'i', model: rootModel, tools: [ops$] });
    return { root, executed, opsModel };
  }

  /** The decision key of the pending call deploying `service`. */
  const idOf = (calls: readonly { id: string; arguments: string }[], service: string) =>
    calls.find((c) => JSON.parse(c.arguments).service === service)!.id;

  it('library: ids differ; the bare call id is unknown; one decision answers one call; each runs once', async () => {
    const { root, executed, opsModel } = siblings();
    const first = await start(root, 'Ship it.', { approvals: 'suspend' }).result;
    expect(first.stopReason).toBe('needs_approval');
    const saved = JSON.parse(JSON.stringify(first.suspended)) as Suspended;
    const calls = pendingCalls(saved);
    expect(calls.map((c) => c.id).sort()).toEqual(['outer_1/call_0', 'outer_2/call_0']);
    expect(calls.map((c) => [c.callId, c.path])).toEqual([
      ['call_0', ['ops']],
      ['call_0', ['ops']],
    ]);
    const staging = idOf(calls, 'staging');
    const production = idOf(calls, 'production');
    expect(staging).not.toBe(production);
    // The bare id names neither call; one decision leaves the other call undecided: nothing runs.
    expect(() => resume(root, saved, { call_0: { approve: true } })).toThrow(
      expect.objectContaining({ code: 'unknown_call', callId: 'call_0' }),
    );
    expect(() => resume(root, saved, { [staging]: { approve: true } })).toThrow(
      expect.objectContaining({ code: 'missing_decision', callId: production }),
    );
    expect(() =>
      resume(root, saved, { [staging]: { approve: true }, [production]: { approve: 'yes' } } as never),
    ).toThrow(expect.objectContaining({ field: `decisions.${production}` }));
    expect(executed).toEqual([]);
    const decisions = { [staging]: { approve: true }, [production]: { approve: false, reason: 'not prod' } } as const;
    const resumed = await resume(root, saved, decisions).result;
    expect(resumed.output).toBe('Shipped.');
    expect(executed).toEqual(['staging']);
    // The rejected sub-run's model read the rejection of its own call_0; the other its deploy result.
    const lastResults = opsModel.requests.slice(2).map((r) => r.items.at(-1));
    expect(lastResults).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ callId: 'call_0', output: 'deployed staging' }),
        expect.objectContaining({ callId: 'call_0', isError: true, output: 'Error: the call was rejected: not prod' }),
      ]),
    );
  });

  it('over HTTP (HttpAgent): one interrupt per call with its own id; both resume entries needed; each runs once', async () => {
    const { root, executed } = siblings();
    const runs = localRuns({ agents: { root }, runOptions: { approvals: 'suspend' } });
    server = await listen(createHandler({ runs, authorize: bearer }));
    const url = `${server.url}/agents/root/runs`;
    const client = new HttpAgent({ url, headers: { authorization: 'Bearer p' }, threadId: 't' });
    client.addMessage({ id: 'u1', role: 'user', content: 'Ship it.' });
    const first: AGUIEvent[] = [];
    await client.runAgent({}, { onEvent: ({ event }) => void first.push(event as AGUIEvent) });
    await checkAgUiStream(first);
    const end = first.at(-1) as { type: string; outcome: { type: string; interrupts: Interrupt[] } };
    expect(end.outcome.type).toBe('interrupt');
    type Interrupt = { id: string; metadata: { arguments: string; path: string[]; callId: string } };
    const interrupts = end.outcome.interrupts.map((i) => ({ ...i, arguments: i.metadata.arguments }));
    expect(interrupts.map((i) => i.id).sort()).toEqual(['outer_1/call_0', 'outer_2/call_0']);
    expect(interrupts.map((i) => [i.metadata.callId, i.metadata.path])).toEqual([
      ['call_0', ['ops']],
      ['call_0', ['ops']],
    ]);
    const staging = idOf(interrupts, 'staging');
    const production = idOf(interrupts, 'production');
    const post = (resume: unknown[]) =>
      request(url, {
        principal: 'p',
        body: {
          threadId: 't',
          runId: 'client-run',
          state: {},
          messages: [{ id: 'u1', role: 'user', content: 'Ship it.' }],
          tools: [],
          context: [],
          forwardedProps: {},
          resume,
        },
      });
    const approve = (interruptId: string) => ({ interruptId, status: 'resolved' as const, payload: { approve: true } });
    const refused = [await post([approve('call_0')]), await post([approve(staging)])];
    expect(refused.map((r) => [r.status, (r.body as { error?: { code?: string } }).error?.code])).toEqual([
      [400, 'unknown_call'],
      [400, 'missing_decision'],
    ]);
    expect(executed).toEqual([]);
    const result = await client.runAgent({
      resume: [approve(staging), { interruptId: production, status: 'resolved' as const, payload: { approve: false } }],
    });
    expect(result.result).toMatchObject({ output: 'Shipped.' });
    expect(executed).toEqual(['staging']);
  });
});
