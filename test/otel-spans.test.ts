/**
 * loopctl/otel with the SDK's in-memory exporter (docs/telemetry.md): the exact span tree and
 * attributes of a completed run with tools, a failed run, a retried request, a fallback, a sub-run
 * and MCP calls; span events for steering; context: a tool's own span nests under its
 * `execute_tool`, a run started inside an active span is its child; every span ends exactly once.
 */
import { context, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { Subject } from 'rxjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  Mailbox,
  MemorySession,
  ModelCallError,
  defineAgent,
  mcpTools,
  run,
  start,
  tool,
  type RunEvent,
} from '../src/index.js';
import { collectEvents, scriptedModel, sequentialIds } from '../src/testing/index.js';
import { chatAttributes, otelHarness } from './support/otel.js';
import { fixtureTool, settle, startFixture } from './mcp-server-fixture.js';

const manager = new AsyncLocalStorageContextManager();
beforeAll(() => void context.setGlobalContextManager(manager.enable()));
afterAll(() => {
  manager.disable();
  context.disable();
});

const ids = { idGenerator: sequentialIds() };
const add = tool({
  name: 'add',
  description: 'adds',
  parameters: z.object({ a: z.number(), b: z.number() }),
  execute: ({ a, b }) => a + b,
});
const CHAT_METRIC = {
  'gen_ai.operation.name': 'chat',
  'gen_ai.provider.name': 'scripted',
  'gen_ai.request.model': 'scripted',
};
const runAttributes = (agent: string, model = 'scripted') => ({
  'gen_ai.operation.name': 'invoke_agent',
  'gen_ai.agent.name': agent,
  'gen_ai.provider.name': model,
  'gen_ai.request.model': model,
});

describe('a completed run with tools', () => {
  it('invoke_agent > chat, execute_tool, chat: exactly these spans and attributes, no content', async () => {
    const h = otelHarness();
    const model = scriptedModel([
      {
        toolCalls: [{ name: 'add', arguments: { a: 1, b: 2 } }],
        usage: { inputTokens: 10, outputTokens: 5, totalTokens: 15 },
      },
      { text: ['It is ', '3.'], usage: { inputTokens: 20, outputTokens: 3, totalTokens: 23 } },
    ]);
    const agent = defineAgent({ name: 'calc', instructions: 'Be brief.', model, tools: [add] });
    const options = { telemetry: h.telemetry, idGenerator: sequentialIds() };
    const events = await collectEvents(run(agent, 'What is 1+2?', options));
    expect(events.at(-1)).toMatchObject({ type: 'run_completed', output: 'It is 3.' });
    expect(h.tree({ kinds: true })).toEqual([
      {
        name: 'invoke_agent calc',
        kind: 0,
        attributes: {
          ...runAttributes('calc'),
          'loopctl.run.id': 'run-1',
          'loopctl.stop_reason': 'completed',
          'loopctl.turns': 2,
          'loopctl.usage.reported': true,
          'gen_ai.usage.input_tokens': 30,
          'gen_ai.usage.output_tokens': 8,
        },
        children: [
          {
            name: 'chat scripted',
            kind: 2,
            attributes: {
              ...chatAttributes(1, 'first'),
              'gen_ai.response.finish_reasons': ['tool_calls'],
              'gen_ai.usage.input_tokens': 10,
              'gen_ai.usage.output_tokens': 5,
            },
          },
          {
            name: 'execute_tool add',
            kind: 0,
            attributes: {
              'gen_ai.operation.name': 'execute_tool',
              'gen_ai.tool.name': 'add',
              'gen_ai.tool.call.id': 'call_1_1',
              'gen_ai.tool.type': 'function',
            },
          },
          {
            name: 'chat scripted',
            kind: 2,
            attributes: {
              ...chatAttributes(1, 'first'),
              'gen_ai.response.finish_reasons': ['stop'],
              'gen_ai.usage.input_tokens': 20,
              'gen_ai.usage.output_tokens': 3,
            },
          },
        ],
      },
    ]);
    expect(h.endings()).toEqual({ started: 4, open: [], twice: [] });
    const metric = CHAT_METRIC;
    expect(await h.metric('gen_ai.client.token.usage')).toEqual([
      { attributes: { ...metric, 'gen_ai.token.type': 'input' }, count: 2, sum: 30 },
      { attributes: { ...metric, 'gen_ai.token.type': 'output' }, count: 2, sum: 8 },
    ]);
    expect(await h.metric('gen_ai.client.operation.duration')).toEqual([
      { attributes: metric, count: 2, sum: expect.any(Number) },
    ]);
    expect(await h.metric('loopctl.runs.ended')).toEqual([
      { attributes: { 'gen_ai.agent.name': 'calc', 'loopctl.stop_reason': 'completed' }, value: 1 },
    ]);
  });

  it('captureContent records prompts, outputs, arguments and results, each cut at maxChars and marked', async () => {
    const h = otelHarness({ captureContent: { maxChars: 60 } });
    const model = scriptedModel([{ toolCalls: [{ name: 'add', arguments: { a: 1, b: 2 } }] }, 'It is 3.']);
    const agent = defineAgent({ name: 'calc', instructions: 'Be brief.', model, tools: [add] });
    await collectEvents(run(agent, 'What is 1+2?', { telemetry: h.telemetry }));
    const [root] = h.tree();
    const [chat1, exec, chat2] = root!.children!;
    const cut = (text: string) =>
      text.length <= 60 ? text : `${text.slice(0, 60)}…[truncated ${text.length - 60} chars]`;
    const user = '{"role":"user","parts":[{"type":"text","content":"What is 1+2?"}]}';
    const call = '{"type":"tool_call","id":"call_1_1","name":"add","arguments":"{\\"a\\":1,\\"b\\":2}"}';
    expect(root!.attributes['gen_ai.input.messages']).toBe(cut(`[${user}]`));
    expect(root!.attributes['gen_ai.input.messages']).toMatch(/…\[truncated 8 chars\]$/);
    const answer = '[{"role":"assistant","parts":[{"type":"text","content":"It is 3."}],"finish_reason":"stop"}]';
    expect(root!.attributes['gen_ai.output.messages']).toBe(cut(answer));
    expect(chat1!.attributes['gen_ai.system_instructions']).toBe('[{"type":"text","content":"Be brief."}]');
    expect(chat1!.attributes['gen_ai.output.messages']).toBe(
      cut(`[{"role":"assistant","parts":[${call}],"finish_reason":"tool_calls"}]`),
    );
    expect(exec!.attributes['gen_ai.tool.call.arguments']).toBe('{"a":1,"b":2}');
    expect(exec!.attributes['gen_ai.tool.call.result']).toBe('3');
    const result = '{"role":"tool","parts":[{"type":"tool_call_response","id":"call_1_1","response":"3"}]}';
    expect(chat2!.attributes['gen_ai.input.messages']).toBe(
      cut(`[${user},{"role":"assistant","parts":[${call}]},${result}]`),
    );
  });

  it('a cut never splits a surrogate pair', async () => {
    const h = otelHarness({ captureContent: { maxChars: 2 } });
    const agent = defineAgent({ name: 'e', instructions: '', model: scriptedModel(['ok']) });
    await collectEvents(run(agent, 'x', { telemetry: h.telemetry }));
    const emoji = otelHarness({ captureContent: { maxChars: 2 } });
    const steer = new Mailbox();
    steer.push('a😀b'); // a, the pair (2 code units), b: a cut at 2 would split the pair
    await collectEvents(run(agent, 'x', { telemetry: emoji.telemetry, mailbox: steer }));
    const injected = emoji.tree()[0]!.events!.find((e) => e.name === 'loopctl.steering.injected')!;
    expect(injected.attributes['loopctl.steering.content']).toBe('a…[truncated 3 chars]');
    expect(h.tree()[0]!.attributes['gen_ai.input.messages']).toBe('[{…[truncated 55 chars]');
  });
});

describe('a failed run, a retried request, a fallback', () => {
  it('a model error that recovery gives up on: the chat span and the run span are errors', async () => {
    const h = otelHarness();
    const fatal = new ModelCallError('bad request', { status: 400 });
    const agent = defineAgent({ name: 'f', instructions: '', model: scriptedModel([{ error: fatal }]) });
    const events = await collectEvents(run(agent, 'go', { telemetry: h.telemetry, ...ids }));
    expect(events.at(-1)).toMatchObject({ type: 'run_failed', stopReason: 'model_error' });
    expect(h.tree()).toEqual([
      {
        name: 'invoke_agent f',
        status: { code: 'ERROR', message: 'bad request' },
        attributes: {
          ...runAttributes('f'),
          'loopctl.run.id': expect.any(String),
          'loopctl.stop_reason': 'model_error',
          'loopctl.turns': 1,
          'loopctl.usage.reported': true,
          'gen_ai.usage.input_tokens': 0,
          'gen_ai.usage.output_tokens': 0,
          'error.type': 'ModelCallError',
        },
        children: [
          {
            name: 'chat scripted',
            status: { code: 'ERROR', message: 'bad request' },
            attributes: { ...chatAttributes(1, 'first'), 'error.type': 'ModelCallError' },
          },
        ],
      },
    ]);
    expect(h.endings()).toMatchObject({ open: [], twice: [] });
    expect(await h.metric('loopctl.runs.ended')).toEqual([
      { attributes: { 'gen_ai.agent.name': 'f', 'loopctl.stop_reason': 'model_error' }, value: 1 },
    ]);
  });

  it('a retried request: the failed attempt an error span, a retry event, the retry its own chat span', async () => {
    const h = otelHarness();
    const overloaded = new ModelCallError('overloaded', { status: 529, retryable: true });
    const agent = defineAgent({ name: 'r', instructions: '', model: scriptedModel([{ error: overloaded }, 'fine']) });
    const options = { telemetry: h.telemetry, retry: { initialDelayMs: 1 }, random: () => 0 };
    await collectEvents(run(agent, 'go', options));
    expect(h.shape()).toEqual([
      'invoke_agent r +loopctl.retry',
      '  chat scripted !ERROR(ModelCallError)',
      '  chat scripted',
    ]);
    const [root] = h.tree();
    expect(root!.events).toEqual([
      {
        name: 'loopctl.retry',
        attributes: {
          'loopctl.attempt': 2,
          'loopctl.retry.delay_ms': 0,
          'error.type': 'ModelCallError',
          'loopctl.error.message': 'overloaded',
        },
      },
    ]);
    const attempts = root!.children!.map((c) => [
      c.attributes['loopctl.attempt'],
      c.attributes['loopctl.attempt_cause'],
    ]);
    expect(attempts).toEqual([
      [1, 'first'],
      [2, 'retry'],
    ]);
    const metric = CHAT_METRIC;
    expect(await h.metric('gen_ai.client.operation.duration')).toEqual([
      { attributes: { ...metric, 'error.type': 'ModelCallError' }, count: 1, sum: expect.any(Number) },
      { attributes: metric, count: 1, sum: expect.any(Number) },
    ]);
  });

  it('a fallback: the primary attempt an error span, a fallback event, the fallback its own chat span', async () => {
    const h = otelHarness();
    const down = new ModelCallError('down', { status: 500, retryable: false });
    const primary = scriptedModel([{ error: down }], { id: 'openai:gpt-4o' });
    const fallbackModel = scriptedModel(['from fallback'], { id: 'openai-responses:gpt-4o-mini' });
    const agent = defineAgent({ name: 'fb', instructions: '', model: primary, fallbackModel });
    await collectEvents(run(agent, 'go', { telemetry: h.telemetry, retry: false }));
    expect(h.shape()).toEqual([
      'invoke_agent fb +loopctl.fallback',
      '  chat gpt-4o !ERROR(ModelCallError)',
      '  chat gpt-4o-mini',
    ]);
    const [root] = h.tree();
    expect(root!.attributes).toMatchObject({ 'gen_ai.provider.name': 'openai', 'gen_ai.request.model': 'gpt-4o' });
    expect(root!.events![0]!.attributes).toEqual({
      'loopctl.fallback.from': 'openai:gpt-4o',
      'loopctl.fallback.to': 'openai-responses:gpt-4o-mini',
      'loopctl.fallback.reason': 'down', // the event's reason: the error's message
    });
    expect(root!.children![1]!.attributes).toEqual({
      ...chatAttributes(2, 'fallback', 'gpt-4o-mini'),
      'gen_ai.provider.name': 'openai',
      'gen_ai.response.finish_reasons': ['stop'],
      'gen_ai.usage.input_tokens': 10,
      'gen_ai.usage.output_tokens': 5,
    });
  });
});

describe('sub-runs and MCP calls are children', () => {
  it('a sub-run: its invoke_agent span is a child of the execute_tool span, its own spans below it', async () => {
    const h = otelHarness();
    const inner = tool({ name: 'inner', description: 'inner', parameters: z.object({}), execute: () => 'found' });
    const child = defineAgent({
      name: 'child',
      instructions: '',
      tools: [inner],
      model: scriptedModel([{ toolCalls: [{ name: 'inner' }] }, 'child done']),
    });
    const research = child.asTool({ name: 'research', description: 'research' });
    const parent = defineAgent({
      name: 'parent',
      instructions: '',
      tools: [research],
      model: scriptedModel([{ toolCalls: [{ name: 'research', arguments: { input: 'x' } }] }, 'done']),
    });
    const events = await collectEvents(run(parent, 'go', { telemetry: h.telemetry, idGenerator: sequentialIds() }));
    expect(events.at(-1)).toMatchObject({ type: 'run_completed', output: 'done' });
    expect(h.shape()).toEqual([
      'invoke_agent parent',
      '  chat scripted',
      '  execute_tool research',
      '    invoke_agent child',
      '      chat scripted',
      '      execute_tool inner',
      '      chat scripted',
      '  chat scripted',
    ]);
    const sub = h.tree()[0]!.children![1]!.children![0]!;
    expect(sub.attributes).toMatchObject({ 'loopctl.run.id': 'run-2', 'loopctl.stop_reason': 'completed' });
    expect(h.endings()).toEqual({ started: 8, open: [], twice: [] });
  });

  it('a cancelled parent: the sub-run and its running tool end interrupted, children before parents', async () => {
    const h = otelHarness();
    const blocked = new Subject<string>();
    const wait = tool({ name: 'wait', description: 'wait', parameters: z.object({}), execute: () => blocked });
    const childModel = scriptedModel([{ toolCalls: [{ name: 'wait' }] }]);
    const child = defineAgent({ name: 'child', instructions: '', tools: [wait], model: childModel });
    const parent = defineAgent({
      name: 'parent',
      instructions: '',
      tools: [child.asTool({ name: 'research', description: 'r' })],
      model: scriptedModel([{ toolCalls: [{ name: 'research', arguments: { input: 'x' } }] }]),
    });
    const handle = start(parent, 'go', { telemetry: h.telemetry });
    await new Promise<void>((resolve) => {
      handle.events$.subscribe((e: RunEvent) => {
        if (e.type === 'subrun_event' && e.event.type === 'tool_call_started') resolve();
      });
    });
    handle.cancel('user stop');
    await handle.result.catch(() => undefined);
    expect(h.shape()).toEqual([
      'invoke_agent parent',
      '  chat scripted',
      '  execute_tool research ~interrupted',
      '    invoke_agent child',
      '      chat scripted',
      '      execute_tool wait ~interrupted',
    ]);
    const ended = h.finished().map((s) => s.name);
    expect(ended).toEqual([
      'chat scripted',
      'chat scripted',
      'execute_tool wait',
      'invoke_agent child',
      'execute_tool research',
      'invoke_agent parent',
    ]);
    const sub = h.tree()[0]!.children![1]!.children![0]!;
    expect(sub.attributes).toMatchObject({
      'loopctl.stop_reason': 'cancelled',
      'loopctl.cancel.phase': 'tool_call',
      'loopctl.cancel.reason': 'user stop',
    });
    expect(h.endings()).toMatchObject({ open: [], twice: [] });
  });

  it('an MCP call is a tools/call span under its execute_tool span; a failed one is an error', async () => {
    const h = otelHarness();
    const text = (t: string) => ({ content: [{ type: 'text' as const, text: t }] });
    const f = await startFixture([
      fixtureTool('echo', () => text('echoed')),
      fixtureTool('fails', () => ({ isError: true, content: [{ type: 'text', text: 'disk full' }] })),
    ]);
    try {
      const tools = await mcpTools(f.client);
      const model = scriptedModel([{ toolCalls: [{ name: 'echo' }, { name: 'fails' }] }, 'done']);
      const agent = defineAgent({ name: 'm', instructions: '', model, tools });
      await collectEvents(run(agent, 'go', { telemetry: h.telemetry }));
      await settle();
      expect(h.shape()).toEqual([
        'invoke_agent m',
        '  chat scripted',
        '  execute_tool echo',
        '    tools/call echo',
        '  execute_tool fails !ERROR(ToolExecutionError)',
        '    tools/call fails !ERROR(tool_error)',
        '  chat scripted',
      ]);
      const mcp = h.tree({ kinds: true })[0]!.children![1]!.children![0]!;
      expect(mcp).toEqual({
        name: 'tools/call echo',
        kind: 2,
        attributes: {
          'mcp.method.name': 'tools/call',
          'gen_ai.operation.name': 'execute_tool',
          'gen_ai.tool.name': 'echo',
          'gen_ai.tool.call.id': 'call_1_1',
        },
      });
    } finally {
      await f.client.close();
    }
  });
});

describe('context: user instrumentation nests, runs join the active trace', () => {
  it("a tool's own span (sync and after an await) nests under execute_tool; a hook's under the run", async () => {
    const h = otelHarness();
    const user = h.tracerProvider.getTracer('user');
    const io = tool({
      name: 'io',
      description: 'io',
      parameters: z.object({}),
      execute: async () => {
        user.startSpan('sync work').end();
        await new Promise((r) => setImmediate(r)); // an await across a turn of the event loop
        user.startSpan('fetch').end();
        return 'ok';
      },
    });
    const hooks = { turnStarted: () => void user.startSpan('hook work').end() };
    const model = scriptedModel([{ toolCalls: [{ name: 'io' }] }, 'ok']);
    const agent = defineAgent({ name: 'ctx', instructions: '', tools: [io], hooks, model });
    await collectEvents(run(agent, 'go', { telemetry: h.telemetry }));
    expect(h.shape()).toEqual([
      'invoke_agent ctx',
      '  hook work',
      '  chat scripted',
      '  execute_tool io',
      '    sync work',
      '    fetch',
      '  hook work',
      '  chat scripted',
    ]);
  });

  it('a run started inside an active span is its child, in its trace', async () => {
    const h = otelHarness();
    const agent = defineAgent({ name: 'in', instructions: '', model: scriptedModel(['ok']) });
    const outer = h.tracerProvider.getTracer('app');
    await outer.startActiveSpan('handle request', async (span) => {
      await collectEvents(run(agent, 'go', { telemetry: h.telemetry }));
      span.end();
    });
    expect(h.shape()).toEqual(['handle request', '  invoke_agent in', '    chat scripted']);
    const traces = new Set(h.finished().map((s) => s.spanContext().traceId));
    expect(traces.size).toBe(1);
    expect(trace.getActiveSpan()).toBeUndefined();
  });
});

describe('span events: steering', () => {
  it('steering injected (id; content when captured), withdrawn (Mailbox.withdrawn$ while the run lives)', async () => {
    const h = otelHarness();
    const mailbox = new Mailbox({ idGenerator: sequentialIds().bind(null, 'item') });
    const kept = mailbox.push('focus on errors');
    const slow = tool({
      name: 'slow',
      description: 's',
      parameters: z.object({}),
      execute: () => {
        const dropped = mailbox.push('never mind');
        mailbox.remove(dropped);
        return 'ok';
      },
    });
    const model = scriptedModel([{ toolCalls: [{ name: 'slow' }] }, 'ok']);
    const agent = defineAgent({ name: 's', instructions: '', tools: [slow], model });
    await collectEvents(run(agent, 'go', { telemetry: h.telemetry, mailbox }));
    mailbox.remove(mailbox.push('after the run')); // no run lives: nothing recorded
    expect(h.tree()[0]!.events).toEqual([
      { name: 'loopctl.steering.injected', attributes: { 'loopctl.steering.id': kept.id } },
      { name: 'loopctl.steering.withdrawn', attributes: { 'loopctl.steering.id': 'item-2' } },
    ]);
  });

  it('an unsubscribed run still ends its spans, cancelled with reason unsubscribed', async () => {
    const h = otelHarness();
    const agent = defineAgent({ name: 'u', instructions: '', model: scriptedModel([{ text: 'late', delayMs: 1000 }]) });
    let requested!: () => void;
    const modelRequest = new Promise<void>((resolve) => (requested = resolve));
    const sub = run(agent, 'go', { telemetry: h.telemetry }).subscribe((e) => {
      if (e.type === 'model_request_started') requested();
    });
    await modelRequest; // the model's 1 s delay has begun: unsubscribe then, on the event, not after a delay
    sub.unsubscribe();
    expect(h.shape()).toEqual(['invoke_agent u', '  chat scripted ~interrupted']);
    expect(h.tree()[0]!.attributes).toMatchObject({
      'loopctl.cancel.phase': 'model_request',
      'loopctl.cancel.reason': '{"type":"unsubscribed"}',
    });
  });
});

describe('approvals as span events', () => {
  it('requested, then decided: approved (the call started) or not (its error named), on the run span', async () => {
    const h = otelHarness();
    const guarded = tool({
      name: 'guarded',
      description: 'needs a yes',
      parameters: z.object({}),
      needsApproval: true,
      execute: () => 'ran',
    });
    const model = scriptedModel([
      {
        toolCalls: [
          { name: 'guarded', callId: 'c1' },
          { name: 'guarded', callId: 'c2' },
        ],
      },
      'done',
    ]);
    const agent = defineAgent({ name: 'g', instructions: '', model, tools: [guarded] });
    const handle = start(agent, 'go', { telemetry: h.telemetry });
    handle.events$.subscribe((event) => {
      if (event.type !== 'tool_approval_requested') return;
      if (event.callId === 'c1') handle.approve('c1');
      else handle.reject('c2', 'no');
    });
    await handle.result;
    const events = h.tree()[0]!.events!.filter((e) => e.name.startsWith('loopctl.approval.'));
    expect(events).toEqual([
      {
        name: 'loopctl.approval.requested',
        attributes: { 'gen_ai.tool.call.id': 'c1', 'gen_ai.tool.name': 'guarded' },
      },
      {
        name: 'loopctl.approval.requested',
        attributes: { 'gen_ai.tool.call.id': 'c2', 'gen_ai.tool.name': 'guarded' },
      },
      {
        name: 'loopctl.approval.decided',
        attributes: {
          'gen_ai.tool.call.id': 'c1',
          'loopctl.approval.approved': true,
          'loopctl.approval.outcome': 'approved',
        },
      },
      {
        name: 'loopctl.approval.decided',
        attributes: {
          'gen_ai.tool.call.id': 'c2',
          'loopctl.approval.approved': false,
          'loopctl.approval.outcome': 'rejected',
          'error.type': 'ToolCallRejectedError',
        },
      },
    ]);
  });
});

describe('a compaction', () => {
  it('the summary call is a chat span ended with the summary; the run span gets a loopctl.compaction event', async () => {
    const h = otelHarness();
    const model = scriptedModel([
      { text: 'the earlier talk', usage: { inputTokens: 300, outputTokens: 20, totalTokens: 320 } },
      'done',
    ]);
    const history = [
      { type: 'user', id: 'u1', text: 'q '.repeat(300) },
      { type: 'assistant', id: 'a1', text: 'a '.repeat(300), toolCalls: [] },
    ] as const;
    const session = new MemorySession([...history]);
    const agent = defineAgent({
      name: 'long',
      instructions: '',
      model,
      contextWindow: 100,
      compaction: { keepRecentTurns: 1 },
    });
    const events = await collectEvents(run(agent, 'next', { session, telemetry: h.telemetry, ...ids }));
    expect(events.at(-1)).toMatchObject({ type: 'run_completed', output: 'done' });
    expect(h.shape()).toEqual(['invoke_agent long +loopctl.compaction', '  chat scripted', '  chat scripted']);
    const [run0] = h.tree();
    const summaryChat = run0!.children![0]!;
    expect(summaryChat.attributes).toMatchObject({
      'gen_ai.usage.input_tokens': 300,
      'gen_ai.usage.output_tokens': 20,
    });
    const completed = events.find((e) => e.type === 'compaction_completed')!;
    expect(run0!.events![0]).toEqual({
      name: 'loopctl.compaction',
      attributes: {
        'loopctl.compaction.strategy': 'summary',
        'loopctl.compaction.items': 2,
        'loopctl.compaction.tokens_before': completed.type === 'compaction_completed' ? completed.tokensBefore : -1,
        'loopctl.compaction.tokens_after': completed.type === 'compaction_completed' ? completed.tokensAfter : -1,
      },
    });
    expect(h.endings()).toMatchObject({ open: [], twice: [] });
  });
});
