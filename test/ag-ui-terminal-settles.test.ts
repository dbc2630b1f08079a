/**
 * A terminal settles everything (docs/ui.md, "A terminal settles everything"): before RUN_FINISHED (cancelled)
 * or RUN_ERROR, every call still running or awaiting approval gets a TOOL_CALL_RESULT marked interrupted,
 * carrying the text `partial` pairs it with, so an AG-UI client holds no open call. Checked with the real
 * mapper (live, re-attached after each frame, compacted) and with @ag-ui/client's HttpAgent over HTTP.
 */
import { HttpAgent, type AgentSubscriber } from '@ag-ui/client';
import type { AGUIEvent } from '@ag-ui/core';
import { from, lastValueFrom, toArray } from 'rxjs';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { parseEventId, toAgUiFrames, type AgUiFrame } from '../src/ag-ui/index.js';
import { createHandler } from '../src/http/index.js';
import { defineAgent, localRuns, tool, type RunEvent, type Runs } from '../src/index.js';
import { collectEvents, gate, scriptedModel } from '../src/testing/index.js';
import { checkAgUiStream, compactEvents } from './support/ag-ui.js';
import { hang, writeFile } from './support/gated-tools.js';
import { bearer, listen, request, type Listening } from './support/http.js';

const write = writeFile;
const quick = tool({ name: 'quick', description: 'q', parameters: z.object({}), execute: () => 'quick done' });

type Case = 'running' | 'awaiting' | 'batch';
const CALLS: Record<Case, { name: string; callId: string; arguments?: Record<string, unknown> }[]> = {
  running: [{ name: 'hang', callId: 'h1' }],
  awaiting: [{ name: 'write_file', callId: 'w1', arguments: { path: 'a.md' } }],
  batch: [
    { name: 'hang', callId: 'h1' },
    { name: 'write_file', callId: 'w1', arguments: { path: 'a.md' } },
    { name: 'hang', callId: 'h2' },
    { name: 'quick', callId: 'q1' },
  ],
};
/** The calls that are open when the run ends (the batch's `quick` has its result by then). */
const OPEN: Record<Case, Record<string, boolean>> = {
  running: { h1: true },
  awaiting: { w1: false },
  batch: { h1: true, w1: false, h2: true },
};

/**
 * Runs on thread `t` whose one step makes the case's calls. `fail`: an afterToolCall hook throws for `quick`,
 * which fails the run while the others are open (the batch only).
 */
function runsFor(c: Case, fail = false): Runs {
  const calls = CALLS[c].map((k) => ({ ...k, arguments: k.arguments ?? {} }));
  const model = scriptedModel([{ text: ['Working ', 'on it.'], toolCalls: calls }]);
  const hooks = fail
    ? {
        afterToolCall: ({ call }: { call: { name: string } }) => {
          if (call.name === 'quick') throw new Error('audit log unavailable');
        },
      }
    : undefined;
  const agent = defineAgent({
    name: 'helper',
    instructions: 'i',
    model,
    tools: [hang, write, quick],
    parallelToolCalls: { maxConcurrency: 4 },
    ...(hooks ? { hooks } : {}),
  });
  return localRuns({ agents: { helper: agent } });
}

/** Resolves once every call of the case is running or awaiting approval. */
function allOpen(runs: Runs, runId: string, c: Case): Promise<void> {
  const want = new Set(Object.keys(OPEN[c]));
  const open = gate();
  const sub = runs.events(runId, { principal: 'p' }).subscribe((e) => {
    if (e.type === 'tool_call_started' || e.type === 'tool_approval_requested') want.delete(e.callId);
    if (want.size === 0) open.open();
  });
  return open.promise.finally(() => sub.unsubscribe());
}

/** The interrupted results of a stream: call id → `metadata.loopctl`. */
function settled(events: readonly AGUIEvent[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const e of events)
    if (e.type === 'TOOL_CALL_RESULT' && (e.metadata?.['loopctl'] as { run?: string } | undefined)?.run !== undefined)
      out[e.toolCallId] = e.metadata!['loopctl'];
  return out;
}

/** Every call that got TOOL_CALL_START has a TOOL_CALL_RESULT before the terminal. */
function expectNoOpenCall(events: readonly AGUIEvent[]): number {
  const open = new Set<string>();
  for (const e of events) {
    if (e.type === 'TOOL_CALL_START') open.add(e.toolCallId);
    if (e.type === 'TOOL_CALL_RESULT') open.delete(e.toolCallId);
    if (e.type === 'RUN_FINISHED' || e.type === 'RUN_ERROR') expect([...open]).toEqual([]);
  }
  return events.filter((e) => e.type === 'TOOL_CALL_START').length;
}

describe('AG-UI: a terminal settles every open call (the mapper)', () => {
  for (const c of ['running', 'awaiting', 'batch'] as const) {
    it(`a cancelled run with ${c === 'batch' ? 'a parallel batch' : `a call ${c}`}: interrupted results first`, async () => {
      const runs = runsFor(c);
      const { runId } = await runs.start({ agent: 'helper', threadId: 't', input: 'go', principal: 'p' });
      await allOpen(runs, runId, c);
      expect(await runs.cancel(runId, 'stopped by the user', 'p')).toBe(true);
      const events: RunEvent[] = await collectEvents(runs.events(runId, { principal: 'p' }));
      const terminal = events.at(-1)!;
      expect(terminal.type).toBe('run_cancelled');
      const frames = await lastValueFrom(from(events).pipe(toAgUiFrames({ threadId: 't' }), toArray()));
      const agui = frames.map((f) => f.event);
      await checkAgUiStream(agui);
      const want = Object.fromEntries(
        Object.entries(OPEN[c]).map(([id, ran]) => [id, { interrupted: true, run: 'cancelled', ran }]),
      );
      expect(settled(agui)).toEqual(want);
      // The same pairing run_cancelled.partial has: the engine's text for a call cut short.
      const partial = (terminal as Extract<RunEvent, { type: 'run_cancelled' }>).partial;
      for (const id of Object.keys(OPEN[c])) {
        const result = agui.find((e) => e.type === 'TOOL_CALL_RESULT' && e.toolCallId === id) as { content: string };
        const paired = partial.find((i) => i.type === 'tool_result' && i.callId === id);
        expect(paired).toMatchObject({ interrupted: true, output: result.content });
        expect(result.content).toBe('interrupted: the run was stopped before this call finished');
      }
      // All of them belong to the terminal's frames, before RUN_FINISHED (cancelled).
      const group = frames.filter((f) => parseEventId(f.id)!.seq === terminal.seq).map((f) => f.event.type);
      expect(group.at(-1)).toBe('RUN_FINISHED');
      expect(group.filter((t) => t === 'TOOL_CALL_RESULT').length).toBe(Object.keys(OPEN[c]).length);
      const starts = expectNoOpenCall(agui);
      console.log(`${c}: ${starts} calls started on the wire, ${Object.keys(OPEN[c]).length} settled at the terminal`);
    });
  }

  it('a failed run (a hook throws mid-batch): the calls still open get results marked run: failed', async () => {
    const runs = runsFor('batch', true);
    const { runId } = await runs.start({ agent: 'helper', threadId: 't', input: 'go', principal: 'p' });
    const events: RunEvent[] = await collectEvents(runs.events(runId, { principal: 'p' }));
    expect(events.at(-1)).toMatchObject({ type: 'run_failed' });
    const agui = (await lastValueFrom(from(events).pipe(toAgUiFrames({ threadId: 't' }), toArray()))).map(
      (f) => f.event,
    );
    await checkAgUiStream(agui);
    expect(settled(agui)).toEqual({
      h1: { interrupted: true, run: 'failed', ran: true },
      w1: { interrupted: true, run: 'failed', ran: false },
      h2: { interrupted: true, run: 'failed', ran: true },
    });
    expect(agui.at(-1)).toMatchObject({ type: 'RUN_ERROR' });
    expectNoOpenCall(agui);
  });

  it('a client re-attached after any frame, live or compacted, gets the same settlement', async () => {
    const runs = runsFor('batch');
    const { runId } = await runs.start({ agent: 'helper', threadId: 't', input: 'go', principal: 'p' });
    await allOpen(runs, runId, 'batch');
    await runs.cancel(runId, 'stopped', 'p');
    const events: RunEvent[] = await collectEvents(runs.events(runId, { principal: 'p' }));
    const all = await lastValueFrom(from(events).pipe(toAgUiFrames({ threadId: 't' }), toArray()));
    let checked = 0;
    for (const source of [events, compactEvents(events)])
      for (let i = 0; i < all.length; i++) {
        const after = parseEventId(all[i]!.id)!;
        const rest: AgUiFrame[] = await lastValueFrom(
          from(source).pipe(toAgUiFrames({ threadId: 't', after }), toArray()),
        );
        expect(rest.map((f) => f.id)).toEqual(all.slice(i + 1).map((f) => f.id));
        expect(settled(rest.map((f) => f.event))).toEqual(settled(all.slice(i + 1).map((f) => f.event)));
        checked++;
      }
    console.log(`re-attached after each of ${all.length} frames, live and compacted: ${checked} tails checked`);
    expect(Object.keys(settled(all.map((f) => f.event))).sort()).toEqual(['h1', 'h2', 'w1']);
  });
});

describe('AG-UI: a terminal settles every open call (HttpAgent over loopctl/http)', () => {
  let server: Listening | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  async function runOverHttp(c: Case, fail = false) {
    const runs = runsFor(c, fail);
    server = await listen(createHandler({ runs, authorize: bearer }));
    const agent = new HttpAgent({
      url: `${server.url}/agents/helper/runs`,
      headers: { authorization: 'Bearer p' },
      threadId: 't',
    });
    agent.addMessage({ id: 'u1', role: 'user', content: 'go' });
    const events: AGUIEvent[] = [];
    const subscriber: AgentSubscriber = {
      onEvent: ({ event }) => void events.push(event as AGUIEvent),
      onRunStartedEvent: ({ event }) => {
        if (fail) return;
        void allOpen(runs, event.runId, c).then(() =>
          request(`${server!.url}/runs/${event.runId}/cancel`, { body: { reason: 'Stop' }, principal: 'p' }),
        );
      },
    };
    await agent.runAgent({}, subscriber).catch(() => undefined); // RUN_ERROR rejects runAgent
    await checkAgUiStream(events);
    return { agent, events };
  }

  for (const c of ['running', 'awaiting', 'batch'] as const)
    it(`Stop with ${c === 'batch' ? 'a parallel batch' : `a call ${c}`}: every call in the client's messages has its result`, async () => {
      const { agent, events } = await runOverHttp(c);
      expect(events.at(-1)).toMatchObject({ type: 'RUN_FINISHED', outcome: { type: 'cancelled' } });
      const calls = agent.messages.flatMap((m) => (m.role === 'assistant' ? (m.toolCalls ?? []) : []));
      const results = new Map(agent.messages.flatMap((m) => (m.role === 'tool' ? [[m.toolCallId, m]] : [])));
      expect(calls.map((k) => k.id).sort()).toEqual(
        CALLS[c]
          .map((k) => k.callId)
          .filter((id) => id !== 'q1' || c === 'batch')
          .sort(),
      );
      for (const call of calls) expect(results.has(call.id)).toBe(true);
      expect(settled(events)).toEqual(
        Object.fromEntries(
          Object.entries(OPEN[c]).map(([id, ran]) => [id, { interrupted: true, run: 'cancelled', ran }]),
        ),
      );
      console.log(`${c}: ${calls.length} calls in the client's messages, each with a result`);
    });

  it('a failed run over HTTP: RUN_ERROR, and no call of the batch left without a result', async () => {
    const { agent, events } = await runOverHttp('batch', true);
    expect(events.at(-1)).toMatchObject({ type: 'RUN_ERROR' });
    const calls = agent.messages.flatMap((m) => (m.role === 'assistant' ? (m.toolCalls ?? []) : []));
    const answered = new Set(agent.messages.flatMap((m) => (m.role === 'tool' ? [m.toolCallId] : [])));
    expect(calls.map((k) => k.id).sort()).toEqual(['h1', 'h2', 'q1', 'w1']);
    expect(calls.filter((k) => !answered.has(k.id))).toEqual([]);
    expect(Object.keys(settled(events)).sort()).toEqual(['h1', 'h2', 'w1']);
  });
});
