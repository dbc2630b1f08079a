import fc from 'fast-check';
import { describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import {
  Mailbox,
  MemorySession,
  ResumeError,
  RunEventSchema,
  RunFailedError,
  defineAgent,
  resume,
  start,
  tool,
  type RunCompleted,
  type RunEvent,
  type Suspended,
} from '../src/index.js';
import { collectEvents, scriptedModel, sequentialIds } from '../src/testing/index.js';
import { comparable, normalizedIds, suspendPath, waitingPath, type ApprovalScript } from './support/approval-paths.js';

/**
 * Suspend mode and resume() ("approvals", docs/run-control.md): a suspended run commits nothing and
 * leaves a JSON value; resuming it gives the waiting path's events and history; steering pushed while
 * suspended is delivered once, after the resume; every ResumeError code.
 */
const gated = tool({
  name: 'gated',
  description: 'g',
  parameters: z.object({}),
  needsApproval: true,
  execute: () => 'G',
});
const free = tool({ name: 'free', description: 'f', parameters: z.object({}), execute: () => 'F' });
const agentOf = () =>
  defineAgent({
    name: 'susp',
    instructions: '',
    tools: [gated, free],
    model: scriptedModel([
      {
        toolCalls: [
          { name: 'free', callId: 'f1' },
          { name: 'gated', callId: 'g1' },
        ],
      },
      'finished',
    ]),
  });

async function suspendOnce(session = new MemorySession(), mailbox = new Mailbox()) {
  const agent = agentOf();
  const handle = start(agent, 'go', { session, mailbox, approvals: 'suspend', idGenerator: sequentialIds() });
  const events = await collectEvents(handle.events$);
  const result = await handle.result;
  return { agent, session, mailbox, events, result, suspended: result.suspended! };
}

describe('suspend mode', () => {
  it("ends run_completed needs_approval with output '', commits nothing, and a versioned JSON value", async () => {
    const { session, events, result, suspended } = await suspendOnce();
    const terminal = events.at(-1) as RunCompleted;
    expect(terminal).toMatchObject({
      type: 'run_completed',
      stopReason: 'needs_approval',
      output: '',
      finishReason: 'tool_calls',
    });
    expect(RunEventSchema.parse(terminal)).toEqual(terminal);
    expect(events.map((e) => e.type)).toEqual(
      [
        'run_started',
        'turn_started',
        'model_request_started',
        'text_delta',
        'model_response_completed',
        'tool_approval_requested',
        'run_completed',
      ].filter((t) => t !== 'text_delta' || events.some((e) => e.type === 'text_delta')),
    );
    expect(events.some((e) => e.type === 'tool_call_started')).toBe(false); // nothing of the batch ran
    expect(session.writes).toBe(0);
    expect(result).toMatchObject({ output: '', items: [], suspended });
    expect(suspended).toEqual({
      version: 1,
      suspensionId: expect.any(String),
      runId: result.runId,
      agent: 'susp',
      sessionHead: null,
      turn: 1,
      items: [
        { type: 'user', id: expect.any(String), text: 'go' },
        {
          type: 'assistant',
          id: expect.any(String),
          text: '',
          toolCalls: [
            { callId: 'f1', name: 'free', arguments: '{}' },
            { callId: 'g1', name: 'gated', arguments: '{}' },
          ],
        },
      ],
      pending: [{ callId: 'g1', name: 'gated', arguments: '{}' }],
      decisions: {},
      usage: { inputTokens: 10, outputTokens: 5, totalTokens: 15, reported: true },
      seal: {
        alg: 'HMAC-SHA256',
        key: expect.any(String),
        agent: expect.any(String),
        // f1 needed no approval (it runs at the resume); g1 awaits a decision.
        calls: { f1: { status: 'free', mac: expect.any(String) }, g1: { status: 'pending', mac: expect.any(String) } },
        mac: expect.any(String),
      },
    });
    expect(JSON.parse(JSON.stringify(suspended))).toEqual(suspended);
  });

  it('resume commits once, at its end, the suspended Items and its own; the commit carries suspensionId', async () => {
    const { agent, session, suspended } = await suspendOnce();
    const appends: unknown[] = [];
    const append = session.append.bind(session);
    session.append = (items, options) => {
      appends.push(options?.suspensionId);
      return append(items, options);
    };
    const handle = resume(agent, JSON.parse(JSON.stringify(suspended)), { g1: { approve: true } }, { session });
    const result = await handle.result;
    expect(handle.runId).not.toBe(suspended.runId);
    expect(result.output).toBe('finished');
    expect(appends).toEqual([suspended.suspensionId]);
    expect(session.items.map((i) => i.type)).toEqual(['user', 'assistant', 'tool_result', 'tool_result', 'assistant']);
    expect(session.items.slice(2, 4)).toEqual([
      { type: 'tool_result', callId: 'f1', output: 'F', isError: false },
      { type: 'tool_result', callId: 'g1', output: 'G', isError: false },
    ]);
  });

  it('a rejection at resume reaches the model as tool_call_failed (ToolCallRejectedError)', async () => {
    const { agent, suspended } = await suspendOnce();
    const handle = resume(agent, suspended, { g1: { approve: false, reason: 'not today' } });
    const events = await collectEvents(handle.events$);
    expect(events.find((e) => e.type === 'tool_call_failed')).toMatchObject({
      callId: 'g1',
      error: { name: 'ToolCallRejectedError', message: 'the call was rejected: not today' },
    });
    expect((await handle.result).items.find((i) => i.type === 'tool_result' && i.callId === 'g1')).toMatchObject({
      output: 'Error: the call was rejected: not today',
      isError: true,
    });
  });

  it('steering pushed while suspended is delivered after the resume, once; suspended never holds it', async () => {
    const mailbox = new Mailbox();
    const { agent, session, suspended } = await suspendOnce(new MemorySession(), mailbox);
    expect(JSON.stringify(suspended)).not.toContain('while suspended');
    const token = mailbox.push('while suspended');
    const model = agent.model as ReturnType<typeof scriptedModel>;
    const resumed = resume(agent, suspended, { g1: { approve: true } }, { session, mailbox });
    const events = await collectEvents(resumed.events$);
    const injected = events.filter((e) => e.type === 'user_message_injected');
    expect(injected).toMatchObject([{ id: token.id, content: 'while suspended', turn: 2 }]);
    expect(session.items.filter((i) => i.type === 'user' && i.text === 'while suspended')).toHaveLength(1);
    expect(mailbox.size).toBe(0);
    const sent = model.requests.at(-1)!.items;
    expect(sent.filter((i) => i.type === 'user' && i.text === 'while suspended')).toHaveLength(1);
  });
});

describe('wait mode through a handle', () => {
  it("a sub-run's call awaiting approval is decided through the parent's control (handle.approve)", async () => {
    const inner = defineAgent({
      name: 'inner',
      instructions: '',
      tools: [gated],
      model: scriptedModel([{ toolCalls: [{ name: 'gated', callId: 'inner_g' }] }, 'inner done']),
    });
    const outer = defineAgent({
      name: 'outer',
      instructions: '',
      tools: [inner.asTool({ name: 'helper', description: 'h' })],
      model: scriptedModel([
        { toolCalls: [{ name: 'helper', callId: 'h1', arguments: { input: 'x' } }] },
        'outer done',
      ]),
    });
    const handle = start(outer, 'go');
    handle.events$.subscribe((e) => {
      if (e.type === 'subrun_event' && e.event.type === 'tool_approval_requested') {
        expect(handle.approve(e.event.callId)).toBe(true);
      }
    });
    expect((await handle.result).output).toBe('outer done');
  });
});

describe('ResumeError: every code', () => {
  const codeOf = (fn: () => unknown): string | undefined => {
    try {
      fn();
    } catch (err) {
      expect(err).toBeInstanceOf(ResumeError);
      return (err as ResumeError).code;
    }
    return undefined;
  };

  it('version: not version 1, or not a suspension at all', async () => {
    const { agent, suspended } = await suspendOnce();
    const approve = { g1: { approve: true } } as const;
    expect(codeOf(() => resume(agent, { ...suspended, version: 2 } as unknown as Suspended, approve))).toBe('version');
    expect(codeOf(() => resume(agent, null as unknown as Suspended, {}))).toBe('version');
    expect(codeOf(() => resume(agent, { ...suspended, items: 'x' } as unknown as Suspended, approve))).toBe('version');
  });

  it('unknown_call and missing_decision name the call', async () => {
    const { agent, suspended } = await suspendOnce();
    const extra = { g1: { approve: true }, f1: { approve: true } } as const;
    expect(codeOf(() => resume(agent, suspended, extra))).toBe('unknown_call');
    expect(codeOf(() => resume(agent, suspended, {}))).toBe('missing_decision');
    try {
      resume(agent, suspended, {});
    } catch (err) {
      expect((err as ResumeError).callId).toBe('g1');
    }
  });

  it('already_resumed: within the process without a session; a run that did not complete may be resumed again, but what it started never runs twice', async () => {
    const ran = { free: 0, gated: 0 };
    const counting = defineAgent({
      name: 'susp',
      instructions: '',
      tools: [
        tool({ ...gated, parameters: z.object({}), execute: () => (ran.gated++, 'G') }),
        tool({ ...free, parameters: z.object({}), execute: () => (ran.free++, 'F') }),
      ],
      model: scriptedModel([
        {
          toolCalls: [
            { name: 'free', callId: 'f1' },
            { name: 'gated', callId: 'g1' },
          ],
        },
        'finished',
      ]),
    });
    const suspended = (await start(counting, 'go', { approvals: 'suspend' }).result).suspended!;
    // The first resume runs both calls, then is cancelled before its next model request: it commits nothing.
    const cancelled = resume(counting, suspended, { g1: { approve: true } });
    cancelled.events$.subscribe((e) => {
      if (e.type === 'tool_call_completed' && e.callId === 'g1') cancelled.cancel('changed my mind');
    });
    await expect(cancelled.result).rejects.toThrow();
    expect(ran).toEqual({ free: 1, gated: 1 });
    // Resumed again: the claim was given back, but the calls the cancelled run started are not run again.
    const handle = resume(counting, suspended, { g1: { approve: true } });
    const events = await collectEvents(handle.events$);
    const result = await handle.result;
    expect(ran).toEqual({ free: 1, gated: 1 });
    const failed = events.flatMap((e) => (e.type === 'tool_call_failed' ? [[e.callId, e.error.name]] : []));
    expect(failed).toEqual([
      ['f1', 'ToolCallAlreadyStartedError'],
      ['g1', 'ToolCallAlreadyStartedError'],
    ]);
    expect(result.output).toBe('finished');
    // A resume that completed keeps its claim.
    expect(codeOf(() => resume(counting, suspended, { g1: { approve: true } }))).toBe('already_resumed');
  });

  it('already_resumed through the session: another process sees the session hold the Items', async () => {
    const suspensionKey = 'k'.repeat(32);
    const session = new MemorySession();
    const agent = agentOf();
    const first = start(agent, 'go', { session, approvals: 'suspend', idGenerator: sequentialIds(), suspensionKey });
    const suspended = (await first.result).suspended!;
    await resume(agent, suspended, { g1: { approve: true } }, { session, suspensionKey }).result;
    // A second process has its own memory (a fresh copy of loopctl): only the session tells it.
    vi.resetModules();
    const other = (await import('../src/index.js')) as typeof import('../src/index.js');
    const kit = (await import('../src/testing/index.js')) as typeof import('../src/testing/index.js');
    const tools = [
      other.tool({ ...gated, parameters: z.object({}), execute: () => 'G' }),
      other.tool({ name: 'free', description: 'f', parameters: z.object({}), execute: () => 'F' }),
    ];
    const model = kit.scriptedModel(['finished']);
    const same = other.defineAgent({ name: 'susp', instructions: '', tools, model });
    const again = other.resume(same, suspended, { g1: { approve: true } }, { session, suspensionKey });
    const failed = await again.result.catch((e: unknown) => e);
    expect(failed).toMatchObject({
      name: 'RunFailedError',
      stopReason: 'configuration_error',
      error: { name: 'ResumeError', code: 'already_resumed' },
    });
    expect((failed as RunFailedError).cause).toMatchObject({ name: 'ResumeError', code: 'already_resumed' });
  });

  it('stale_session: the session moved on since the suspension; nothing is written', async () => {
    const { agent, session, suspended } = await suspendOnce();
    session.append([{ type: 'user', id: 'meanwhile', text: 'another run' }], { runId: 'other' });
    const writes = session.writes;
    const events = await collectEvents(resume(agent, suspended, { g1: { approve: true } }, { session }).events$);
    expect(events.at(-1)).toMatchObject({
      type: 'run_failed',
      stopReason: 'configuration_error',
      error: { name: 'ResumeError', code: 'stale_session' },
    });
    expect(session.writes).toBe(writes);
  });

  it('a session refusing a second commit of one suspension fails the run session_error (already_resumed)', async () => {
    const { agent, session, suspended } = await suspendOnce();
    // The store saw this suspension committed (say by another process whose Items differ): it refuses.
    session.append([], { runId: 'elsewhere', suspensionId: suspended.suspensionId });
    const other = { ...suspended, suspensionId: suspended.suspensionId };
    const claimedCopy = JSON.parse(JSON.stringify(other)) as Suspended;
    const events = await collectEvents(
      resume(agent, { ...claimedCopy, sessionHead: null }, { g1: { approve: true } }, { session }).events$,
    ).catch((e: unknown) => e as RunEvent[]);
    expect((events as RunEvent[]).at(-1)).toMatchObject({
      type: 'run_failed',
      stopReason: 'session_error',
      error: { name: 'ResumeError', code: 'already_resumed' },
    });
  });
});

describe('suspend → JSON → resume gives the waiting path (property over random schedules)', () => {
  const callArb = fc.record({
    tool: fc.constantFrom('gated' as const, 'maybe' as const, 'free' as const),
    ask: fc.boolean(),
  });
  const scriptArb: fc.Arbitrary<ApprovalScript> = fc
    .record({
      turns: fc.array(
        fc.array(callArb, {
          minLength: 1,
          maxLength: 3,
        }),
        { minLength: 1, maxLength: 3 },
      ),
      rejectMask: fc.array(fc.boolean(), { minLength: 9, maxLength: 9 }),
      steerAt: fc.subarray([1, 2, 3]),
      syncDecisions: fc.boolean(),
      parallel: fc.boolean(),
    })
    .map(({ turns, rejectMask, steerAt, syncDecisions, parallel }) => {
      const reject = new Set<string>();
      turns.forEach((calls, t) => calls.forEach((_, i) => rejectMask[t * 3 + i] && reject.add(`c${t + 1}_${i}`)));
      return { turns, reject, steerAt: new Set(steerAt), syncDecisions, parallel };
    });

  it('the same final history; with decisions given at once, the same events (ignoring runId, seq, at)', async () => {
    await fc.assert(
      fc.asyncProperty(scriptArb, async (script) => {
        const waiting = await waitingPath(script);
        const suspended = await suspendPath(script);
        expect(normalizedIds(suspended.history)).toEqual(normalizedIds(waiting.history));
        expect(waiting.events.at(-1)).toMatchObject({ type: 'run_completed', stopReason: 'completed' });
        type Call = ApprovalScript['turns'][number][number];
        const asks = (c: Call) => c.tool === 'gated' || (c.tool === 'maybe' && c.ask);
        const asking = script.turns.filter((calls) => calls.some(asks));
        expect(suspended.suspensions).toBe(asking.length); // one suspension per batch with a call to decide
        // Each steering item delivered exactly once, after the resume.
        for (const id of suspended.steered) {
          expect(suspended.history.filter((i) => i.type === 'user' && i.id === id)).toHaveLength(1);
        }
        if (script.syncDecisions && !script.parallel) {
          expect(comparable(suspended.events)).toEqual(comparable(waiting.events));
        }
      }),
      { numRuns: Number(process.env.FC_RUNS ?? 60) },
    );
  }, 120_000);
});
