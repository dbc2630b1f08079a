/**
 * The web app's state (src/web/state.ts) under the AG-UI frames of real runs (localRuns → toAgUiFrames), and
 * under the CUSTOM events run control will emit: the transcript, tool cards, steering queued → injected,
 * cancelled and failed outcomes, a restarted answer dropped, and a resume after any frame giving exactly the
 * state of an unbroken stream.
 */
import type { AGUIEvent } from '@ag-ui/core';
import { first, firstValueFrom, lastValueFrom, scan, toArray } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { parseEventId, toAgUiFrames, type AgUiFrame } from '../src/ag-ui/index.js';
import { defineAgent, localRuns, tool, type Runs } from '../src/index.js';
import { gate, scriptedModel, type ScriptedStep } from '../src/testing/index.js';
import { initialState, messagesOf, reduce, runActivity, type Action, type ChatState } from '../src/web/state.js';
import { statusWords } from '../src/web/wording.js';
import { z } from 'zod';
import { hang, writeFile } from './support/gated-tools.js';

const THREAD = 'thread-1';

const lookup = tool({
  name: 'lookup',
  description: 'Looks a word up.',
  parameters: z.object({ word: z.string() }),
  execute: async ({ word }) => `${word}: a greeting`,
});

async function runFrames(steps: (ScriptedStep | string)[], drive?: (runs: Runs, runId: string) => Promise<void>) {
  const model = scriptedModel(steps);
  const runs = localRuns({
    agents: { helper: defineAgent({ name: 'helper', instructions: 'i', model, tools: [lookup] }) },
  });
  const { runId } = await runs.start({ agent: 'helper', threadId: THREAD, input: 'hello?', principal: 'p' });
  await drive?.(runs, runId);
  const all = () =>
    lastValueFrom(runs.events(runId, { principal: 'p' }).pipe(toAgUiFrames({ threadId: THREAD }), toArray()));
  return { runId, frames: await all(), runs, model };
}

const sent = (): ChatState => reduce(initialState(THREAD), { type: 'send', id: 'u1', text: 'hello?' });
const apply = (state: ChatState, frames: readonly AgUiFrame[]) =>
  frames.reduce((s, f) => reduce(s, { type: 'frame', id: f.id, event: f.event }), state);
const frame = (id: string, event: Record<string, unknown>): Action => ({
  type: 'frame',
  id,
  event: event as AGUIEvent,
});

describe('web app state: a real run', () => {
  it('a tool call becomes a card (arguments, result), the answer streams, the run ends completed', async () => {
    const { runId, frames } = await runFrames([
      { toolCalls: [{ name: 'lookup', arguments: { word: 'hi' }, callId: 'c1' }] },
      { text: ['Hi ', 'means ', 'hello.'] },
    ]);
    const state = apply(sent(), frames);
    expect(state.run).toBeUndefined();
    expect(state.entries).toEqual([
      { kind: 'user', id: 'u1', text: 'hello?' },
      {
        kind: 'tool',
        id: 'c1',
        name: 'lookup',
        args: '{"word":"hi"}',
        status: 'done',
        result: 'hi: a greeting',
        startedAt: expect.any(Number),
        endedAt: expect.any(Number),
      },
      { kind: 'answer', id: expect.stringMatching(/^loopctl:/), text: 'Hi means hello.', open: false },
      { kind: 'outcome', id: runId, outcome: 'completed' },
    ]);
    const card = state.entries[1] as { startedAt: number; endedAt: number };
    expect(card.endedAt).toBeGreaterThanOrEqual(card.startedAt); // the card's duration, from the events' timestamps
    // The next run's input: the user's message and loopctl's answer (a minted id: the server ignores it).
    expect(messagesOf(state).map((m) => [m.role, m.content])).toEqual([
      ['user', 'hello?'],
      ['assistant', 'Hi means hello.'],
    ]);
  });

  it('resumed after any frame (saved state as JSON, then the re-attach stream): as an unbroken stream', async () => {
    const { runId, frames, runs } = await runFrames([
      { toolCalls: [{ name: 'lookup', arguments: { word: 'hi' }, callId: 'c1' }], text: ['Let ', 'me look.'] },
      { text: ['Hi ', 'means ', 'hello.'] },
    ]);
    const whole = apply(sent(), frames);
    expect(frames.length).toBeGreaterThan(15);
    for (let k = 0; k < frames.length - 1; k++) {
      const saved = JSON.parse(JSON.stringify(apply(sent(), frames.slice(0, k + 1)))) as ChatState;
      expect(saved.run?.lastEventId).toBe(frames[k]!.id);
      // What the re-attach route sends after Last-Event-ID: the run mapped again, what the page has left out.
      const after = parseEventId(saved.run!.lastEventId!);
      const rest = await lastValueFrom(
        runs.events(runId, { principal: 'p' }).pipe(toAgUiFrames({ threadId: THREAD, after }), toArray()),
      );
      expect(apply(saved, rest)).toEqual(whole);
    }
  });

  it('Stop mid-stream: the outcome says cancelled with its phase and reason; the partial answer stays', async () => {
    const hold = gate();
    const { runId, frames } = await runFrames(
      [{ text: ['Partial ', 'answer'], hold: hold.wait$ }],
      async (runs, id) => {
        // Both pieces streamed (the step then holds): the cancel lands mid-stream, on that event, not after a delay.
        await firstValueFrom(
          runs.events(id, { principal: 'p' }).pipe(
            scan((text, e) => (e.type === 'text_delta' ? text + e.delta : text), ''),
            first((text) => text === 'Partial answer'),
          ),
        );
        expect(await runs.cancel(id, 'stopped by the user', 'p')).toBe(true);
      },
    );
    const state = apply(sent(), frames);
    expect(state.run).toBeUndefined();
    expect(state.entries.slice(1)).toEqual([
      { kind: 'answer', id: expect.any(String), text: 'Partial answer', open: false },
      { kind: 'outcome', id: runId, outcome: 'cancelled', phase: 'model_stream', reason: 'stopped by the user' },
    ]);
  });

  it('steering: queued when sent, injected (and shown as a user message) when the next turn takes it', async () => {
    const hold = gate();
    let steeringId = '';
    const { runId, frames } = await runFrames(
      [{ text: ['Looking'], hold: hold.wait$ }, 'Checked the tests too.'],
      async (runs, id) => {
        steeringId = (await runs.steer(id, 'also check the tests', 'p')).id;
        hold.open();
        await lastValueFrom(runs.events(id, { principal: 'p' }).pipe(toArray()));
      },
    );
    let state = reduce(sent(), { type: 'run', runId });
    state = reduce(state, { type: 'steered', runId, id: steeringId, text: 'also check the tests' });
    expect(state.steering).toEqual([{ id: steeringId, runId, text: 'also check the tests', status: 'queued' }]);
    const injectedAt = frames.findIndex(
      (f) => f.event.type === 'CUSTOM' && f.event.name === 'loopctl.steering_injected',
    );
    state = apply(state, frames.slice(0, injectedAt + 1));
    expect(state.steering).toEqual([{ id: steeringId, runId, text: 'also check the tests', status: 'injected' }]);
    expect(state.entries.at(-1)).toEqual({
      kind: 'user',
      id: steeringId,
      text: 'also check the tests',
      steering: true,
    });
    state = apply(state, frames.slice(injectedAt + 1));
    expect(state.steering).toEqual([]); // injected steering is history once the run ends
    expect(state.entries.map((e) => (e.kind === 'answer' || e.kind === 'user' ? e.text : e.kind))).toEqual([
      'hello?',
      'Looking',
      'also check the tests',
      'Checked the tests too.',
      'outcome',
    ]);
  });
});

describe('web app state: events by hand (run control, retries, failures)', () => {
  const started = () =>
    reduce(
      reduce(sent(), { type: 'run', runId: 'r1' }),
      frame('0', { type: 'RUN_STARTED', threadId: THREAD, runId: 'r1' }),
    );

  it('loopctl.answer_restarted drops the message it names; the new attempt streams under its own id', () => {
    let s = started();
    s = reduce(s, frame('3:0', { type: 'TEXT_MESSAGE_START', messageId: 'm3', role: 'assistant' }));
    s = reduce(s, frame('3', { type: 'TEXT_MESSAGE_CONTENT', messageId: 'm3', delta: 'Half an ans' }));
    s = reduce(s, frame('5:0', { type: 'TEXT_MESSAGE_END', messageId: 'm3' }));
    s = reduce(
      s,
      frame('5', {
        type: 'CUSTOM',
        name: 'loopctl.answer_restarted',
        value: { previousMessageId: 'm3', cause: 'retry' },
      }),
    );
    s = reduce(s, frame('6:0', { type: 'TEXT_MESSAGE_START', messageId: 'm6', role: 'assistant' }));
    s = reduce(s, frame('6', { type: 'TEXT_MESSAGE_CONTENT', messageId: 'm6', delta: 'Whole answer.' }));
    expect(s.entries.slice(1)).toEqual([{ kind: 'answer', id: 'm6', text: 'Whole answer.', open: true }]);
  });

  it('an approval request puts Approve/Reject on the card; a decision marks it; its start keeps the arguments once', () => {
    let s = started();
    const value = { callId: 'c9', name: 'write_file', arguments: '{"path":"a.md"}' };
    s = reduce(s, frame('4', { type: 'CUSTOM', name: 'loopctl.approval_requested', value }));
    expect(s.entries.at(-1)).toEqual({
      kind: 'tool',
      id: 'c9',
      name: 'write_file',
      args: '{"path":"a.md"}',
      status: 'running',
      approval: 'pending',
    });
    const rejected = reduce(s, { type: 'decided', callId: 'c9', approve: false });
    expect(rejected.entries.at(-1)).toMatchObject({ approval: 'rejected' });
    s = reduce(s, frame('5:0', { type: 'TOOL_CALL_START', toolCallId: 'c9', toolCallName: 'write_file' }));
    s = reduce(s, frame('5:1', { type: 'TOOL_CALL_ARGS', toolCallId: 'c9', delta: '{"path":"a.md"}' }));
    expect(s.entries.at(-1)).toMatchObject({ args: '{"path":"a.md"}' }); // the arguments once, not twice
    s = reduce(
      s,
      frame('6', {
        type: 'TOOL_CALL_RESULT',
        messageId: 'x',
        toolCallId: 'c9',
        content: 'not approved',
        role: 'tool',
        metadata: { loopctl: { error: { name: 'ToolCallRejectedError' } } },
      }),
    );
    expect(s.entries.at(-1)).toEqual({
      kind: 'tool',
      id: 'c9',
      name: 'write_file',
      args: '{"path":"a.md"}',
      status: 'failed',
      result: 'not approved',
    });
  });

  it('a graceful stop that reached its boundary (RUN_FINISHED result.stopReason stopped) is a stopped outcome', () => {
    let s = started();
    s = reduce(s, frame('5', { type: 'CUSTOM', name: 'loopctl.stop_requested', value: { at: 'turn_end' } }));
    const result = { output: 'step one', finishReason: 'tool_calls', undelivered: [], stopReason: 'stopped' };
    s = reduce(
      s,
      frame('9', { type: 'RUN_FINISHED', threadId: THREAD, runId: 'r1', result, outcome: { type: 'success' } }),
    );
    expect(s.run).toBeUndefined();
    expect(s.entries.at(-1)).toEqual({ kind: 'outcome', id: 'r1', outcome: 'stopped' });
  });

  it('a compaction puts a marker in the transcript: a note while it runs, one saying what was summarised', () => {
    let s = started();
    const startedValue = {
      cause: 'threshold',
      strategy: 'summary',
      tokensBefore: 9000,
      contextWindow: 10000,
      items: 40,
    };
    s = reduce(s, frame('3', { type: 'CUSTOM', name: 'loopctl.compaction_started', value: startedValue }));
    const done = { strategy: 'summary', summaryId: 's1', items: 40, tokensBefore: 9000, tokensAfter: 1200 };
    s = reduce(s, frame('4', { type: 'CUSTOM', name: 'loopctl.compaction_completed', value: done }));
    const cut = { ...done, strategy: 'truncate', error: { name: 'CompactionError', message: 'x' } };
    s = reduce(s, frame('5', { type: 'CUSTOM', name: 'loopctl.compaction_completed', value: cut }));
    expect(s.entries.slice(-3)).toEqual([
      { kind: 'note', id: 'note-3', text: 'Summarising the earlier conversation…' },
      {
        kind: 'note',
        id: 'note-4',
        text: 'The earlier conversation was summarised to fit the model (40 messages; about 9,000 → 1,200 tokens).',
      },
      {
        kind: 'note',
        id: 'note-5',
        text:
          'The earlier conversation was left out to fit the model because the summary could not be written ' +
          '(40 messages; about 9,000 → 1,200 tokens).',
      },
    ]);
  });

  it('progress shows on the card; a retry and a graceful stop become notes; RUN_ERROR a failed outcome', () => {
    let s = started();
    s = reduce(s, frame('2:0', { type: 'TOOL_CALL_START', toolCallId: 'c1', toolCallName: 'scan' }));
    s = reduce(
      s,
      frame('3', {
        type: 'CUSTOM',
        name: 'loopctl.tool_progress',
        value: { callId: 'c1', name: 'scan', progress: { done: 3 } },
      }),
    );
    expect(s.entries.at(-1)).toMatchObject({ kind: 'tool', progress: '{"done":3}' });
    s = reduce(
      s,
      frame('4', {
        type: 'CUSTOM',
        name: 'loopctl.retry_scheduled',
        value: { attempt: 2, delayMs: 500, error: { name: 'ModelCallError', message: 'HTTP 503' } },
      }),
    );
    s = reduce(s, frame('5', { type: 'CUSTOM', name: 'loopctl.stop_requested', value: { at: 'turn_end' } }));
    expect(s.entries.slice(-2)).toEqual([
      { kind: 'note', id: 'note-4', text: 'The model did not answer (HTTP 503); trying again in 500 ms (attempt 2).' },
      { kind: 'note', id: 'note-5', text: 'Stopping after this step…' },
    ]);
    expect(s.run?.stopRequested).toBe(true);
    s = reduce(s, frame('9', { type: 'RUN_ERROR', message: 'turn limit reached (20)', code: 'max_turns' }));
    expect(s.run).toBeUndefined();
    expect(s.entries.at(-1)).toEqual({
      kind: 'outcome',
      id: 'r1',
      outcome: 'failed',
      reason: 'turn limit reached (20)',
      code: 'max_turns',
    });
    // The failure ended the call that was still running: its card no longer reads running.
    expect(s.entries.find((e) => e.kind === 'tool')).toMatchObject({ id: 'c1', status: 'stopped' });
  });

  it('a cancelled run gives its steering back: those items are queued again for the next run', () => {
    let s = started();
    s = reduce(s, { type: 'steered', runId: 'r1', id: 's1', text: 'also this' });
    s = reduce(
      s,
      frame('6', { type: 'CUSTOM', name: 'loopctl.steering_injected', value: { id: 's1', content: 'also this' } }),
    );
    s = reduce(s, { type: 'steered', runId: 'r1', id: 's2', text: 'and that' });
    s = reduce(s, { type: 'withdrawn', id: 's2' });
    const undelivered = [{ id: 's1', content: 'also this' }];
    s = reduce(
      s,
      frame('8:0', {
        type: 'CUSTOM',
        name: 'loopctl.cancelled',
        value: { phase: 'tool_call', reason: 'x', undelivered },
      }),
    );
    s = reduce(s, frame('8', { type: 'RUN_FINISHED', threadId: THREAD, runId: 'r1', outcome: { type: 'cancelled' } }));
    expect(s.steering).toEqual([{ id: 's1', runId: 'r1', text: 'also this', status: 'queued' }]);
    expect(s.entries.filter((e) => e.kind === 'outcome')).toEqual([
      { kind: 'outcome', id: 'r1', outcome: 'cancelled', phase: 'tool_call', reason: 'x' },
    ]);
  });
});

describe('web app state: a message that steered another tab’s run', () => {
  it('is not shown above that run’s answer: listed queued, it joins the conversation where its turn took it', () => {
    // This tab sent u1 as a new run; the thread had a live run r9 (another tab's): the start answered 202.
    let s = reduce(sent(), { type: 'run', runId: 'r9' });
    s = reduce(s, { type: 'steered', runId: 'r9', id: 'u1', text: 'hello?' });
    expect(s.entries).toEqual([]);
    expect(s.steering).toEqual([{ id: 'u1', runId: 'r9', text: 'hello?', status: 'queued' }]);
    // It follows r9 from its start: the other tab's answer, then the turn that took u1.
    s = reduce(s, frame('0', { type: 'RUN_STARTED', threadId: THREAD, runId: 'r9' }));
    s = reduce(s, frame('1:0', { type: 'TEXT_MESSAGE_START', messageId: 'm1', role: 'assistant' }));
    s = reduce(s, frame('1', { type: 'TEXT_MESSAGE_CONTENT', messageId: 'm1', delta: 'The other tab’s answer' }));
    s = reduce(s, frame('2', { type: 'TEXT_MESSAGE_END', messageId: 'm1' }));
    const injected = { id: 'u1', content: 'hello?' };
    s = reduce(s, frame('3', { type: 'CUSTOM', name: 'loopctl.steering_injected', value: injected }));
    expect(s.entries.map((e) => `${e.kind}:${e.id}`)).toEqual(['answer:m1', 'user:u1']);
    expect(s.entries[1]).toMatchObject({ kind: 'user', text: 'hello?', steering: true });
    expect(s.steering).toEqual([{ id: 'u1', runId: 'r9', text: 'hello?', status: 'injected' }]);
  });
});

describe('web app state: a terminal settles every open card', () => {
  const write = writeFile;

  /** A run whose one step calls `hang` and `write_file` together, cancelled once both are open. */
  async function stoppedBatch() {
    const model = scriptedModel([
      {
        toolCalls: [
          { name: 'hang', arguments: {}, callId: 'h1' },
          { name: 'write_file', arguments: { path: 'a.md' }, callId: 'w1' },
        ],
      },
    ]);
    const runs = localRuns({
      agents: { helper: defineAgent({ name: 'helper', instructions: 'i', model, tools: [hang, write] }) },
    });
    const { runId } = await runs.start({ agent: 'helper', threadId: THREAD, input: 'go', principal: 'p' });
    const open = gate();
    const seen = new Set<string>();
    const watching = runs.events(runId, { principal: 'p' }).subscribe((e) => {
      if (e.type === 'tool_call_started' || e.type === 'tool_approval_requested') seen.add(e.type);
      if (seen.size === 2) open.open();
    });
    await open.promise;
    watching.unsubscribe();
    expect(await runs.cancel(runId, 'stopped by the user', 'p')).toBe(true);
    const frames = await lastValueFrom(
      runs.events(runId, { principal: 'p' }).pipe(toAgUiFrames({ threadId: THREAD }), toArray()),
    );
    return { runId, frames };
  }

  it('Stop with a call running and one awaiting approval: stopped, not run, no decision left on any card', async () => {
    const { runId, frames } = await stoppedBatch();
    const state = apply(sent(), frames);
    const cards = state.entries.filter((e) => e.kind === 'tool');
    console.log('cards after Stop:', cards.map((c) => `${c.id} ${c.status} ${c.approval ?? '-'}`).join('; '));
    expect([...cards].sort((a, b) => a.id.localeCompare(b.id))).toEqual([
      expect.objectContaining({ id: 'h1', name: 'hang', status: 'stopped' }),
      expect.objectContaining({ id: 'w1', name: 'write_file', status: 'not_run' }),
    ]);
    expect(cards.some((c) => c.approval !== undefined)).toBe(false);
    expect(state.entries.at(-1)).toMatchObject({ kind: 'outcome', id: runId, outcome: 'cancelled' });
    expect(state.run).toBeUndefined();
  });

  it('at every frame of that run, a terminal there leaves nothing running, pending or open', async () => {
    const { frames } = await stoppedBatch();
    const end = frame('end', { type: 'RUN_ERROR', message: 'worker gone', code: 'worker_lost' });
    let checked = 0;
    for (let i = 0; i <= frames.length; i++) {
      const before = apply(sent(), frames.slice(0, i));
      if (before.run === undefined) continue; // the run's own terminal is in this prefix already
      const state = reduce(before, end);
      for (const e of state.entries) {
        if (e.kind === 'tool') expect([e.id, e.status]).not.toEqual([e.id, 'running']);
        if (e.kind === 'tool') expect([e.id, e.approval]).not.toEqual([e.id, 'pending']);
        if (e.kind === 'answer') expect(e.open).toBe(false);
      }
      checked++;
    }
    console.log(`terminal after each of ${checked} prefixes: no card running or pending, no answer open`);
    expect(checked).toBe(frames.length); // the last prefix holds the real terminal already
  });

  it("a sub-agent's surfaced call: a card with its path; its result (metadata.loopctl.path, no error) reads done", () => {
    let s = reduce(
      reduce(sent(), { type: 'run', runId: 'r1' }),
      frame('0', { type: 'RUN_STARTED', threadId: THREAD, runId: 'r1' }),
    );
    const path = ['research', 'ops'];
    const value = { callId: 'd1', name: 'deploy', arguments: '{"service":"api"}', path };
    s = reduce(s, frame('4', { type: 'CUSTOM', name: 'loopctl.approval_requested', value }));
    expect(s.entries.at(-1)).toMatchObject({ id: 'd1', path, status: 'running', approval: 'pending' });
    s = reduce(s, { type: 'decided', callId: 'd1', approve: true });
    const metadata = { loopctl: { path } };
    s = reduce(s, frame('5:0', { type: 'TOOL_CALL_START', toolCallId: 'd1', toolCallName: 'deploy', metadata }));
    const result = { type: 'TOOL_CALL_RESULT', messageId: 'x', toolCallId: 'd1', content: 'deployed', metadata };
    s = reduce(s, frame('6', { ...result, role: 'tool' }));
    expect(s.entries.at(-1)).toMatchObject({
      id: 'd1',
      path,
      status: 'done',
      approval: 'approved',
      result: 'deployed',
    });
  });

  it('a decision the server no longer takes (decided: false) says so on the card and in the notice', () => {
    let s = reduce(
      reduce(sent(), { type: 'run', runId: 'r1' }),
      frame('0', { type: 'RUN_STARTED', threadId: THREAD, runId: 'r1' }),
    );
    const value = { callId: 'c9', name: 'write_file', arguments: '{"path":"a.md"}' };
    s = reduce(s, frame('4', { type: 'CUSTOM', name: 'loopctl.approval_requested', value }));
    s = reduce(s, { type: 'undecidable', callId: 'c9' });
    expect(s.entries.at(-1)).toMatchObject({ id: 'c9', approval: 'closed', status: 'running' });
    expect(s.notice).toBe('That call no longer waits for a decision: it was decided already, or its run has ended.');
    s = reduce(s, frame('9', { type: 'RUN_FINISHED', threadId: THREAD, runId: 'r1', outcome: { type: 'cancelled' } }));
    expect(s.entries.find((e) => e.kind === 'tool')).toEqual({
      kind: 'tool',
      id: 'c9',
      name: 'write_file',
      args: '{"path":"a.md"}',
      status: 'not_run',
      approval: 'closed', // the card goes on saying the decision came too late; no buttons
    });
  });

  it('the status line in words: starting, thinking, writing, running a tool, waiting for approval, stopping', () => {
    let s = reduce(sent(), { type: 'run', runId: 'r1' });
    const words = () => statusWords(runActivity(s.run!, s.entries));
    expect(statusWords(runActivity({}, []))).toBe('Starting…');
    expect(words()).toBe('Thinking…');
    s = reduce(s, frame('1:0', { type: 'TEXT_MESSAGE_START', messageId: 'm1', role: 'assistant' }));
    expect(words()).toBe('Writing…');
    s = reduce(s, frame('2:0', { type: 'TEXT_MESSAGE_END', messageId: 'm1' }));
    s = reduce(s, frame('3:0', { type: 'TOOL_CALL_START', toolCallId: 'c1', toolCallName: 'read_file' }));
    expect(words()).toBe('Running read_file…');
    s = reduce(s, frame('3:1', { type: 'TOOL_CALL_START', toolCallId: 'c2', toolCallName: 'list_files' }));
    expect(words()).toBe('Running 2 tools…');
    const value = { callId: 'c3', name: 'write_file', arguments: '{}' };
    s = reduce(s, frame('4', { type: 'CUSTOM', name: 'loopctl.approval_requested', value }));
    expect(words()).toBe('Waiting for your approval');
    s = reduce(s, frame('5', { type: 'CUSTOM', name: 'loopctl.stop_requested', value: { at: 'turn_end' } }));
    expect(words()).toBe('Waiting for your approval'); // the person is asked: that comes first
    s = reduce(s, { type: 'decided', callId: 'c3', approve: true });
    s = reduce(
      s,
      frame('6', { type: 'TOOL_CALL_RESULT', messageId: 'x', toolCallId: 'c3', content: 'ok', role: 'tool' }),
    );
    expect(words()).toBe('Stopping after this step…');
    s = reduce(s, { type: 'stopping' });
    expect(words()).toBe('Stopping…');
  });

  it('a Stop whose request failed: the run is no longer said to be stopping, and nothing else of it changes', () => {
    let s = reduce(sent(), { type: 'run', runId: 'r1' });
    s = reduce(s, frame('1:0', { type: 'TEXT_MESSAGE_START', messageId: 'm1', role: 'assistant' }));
    const before = s;
    s = reduce(s, { type: 'stopping' });
    expect(statusWords(runActivity(s.run!, s.entries))).toBe('Stopping…');
    s = reduce(s, { type: 'stop_failed' });
    expect(s).toEqual(before);
    expect(statusWords(runActivity(s.run!, s.entries))).toBe('Writing…');
    expect(reduce(initialState('t'), { type: 'stop_failed' })).toEqual(initialState('t')); // no run: nothing
  });
});
