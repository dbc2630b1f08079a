import { filter, firstValueFrom, lastValueFrom, toArray } from 'rxjs';
import { describe, expect, it } from 'vitest';
import {
  AgentNotFoundError,
  ConfigurationError,
  HistoryConflictError,
  MemorySession,
  NotSupportedError,
  RunNotFoundError,
  RunNotLiveError,
  ThreadBusyError,
  defineAgent,
  localRuns,
  tool,
  type Item,
  type RunEvent,
  type Runs,
} from '../src/index.js';
import { collectEvents, gate, scriptedModel, type ScriptedStep } from '../src/testing/index.js';
import { z } from 'zod';

/** localRuns: the Runs contract in one process (docs/ui.md, "The Runs interface"). */

const agentWith = (steps: (ScriptedStep | string)[]) => {
  const model = scriptedModel(steps);
  return { model, agent: defineAgent({ name: 'helper', instructions: 'Help.', model }) };
};
const events = (runs: Runs, runId: string, principal = 'alice', afterSeq?: number) =>
  collectEvents(runs.events(runId, { principal, afterSeq }));
const types = (list: readonly RunEvent[]) => list.map((e) => e.type);
const userTexts = (items: readonly Item[]) => items.flatMap((i) => (i.type === 'user' ? [i.text] : []));

describe('localRuns: start and events', () => {
  it('starts a run at once and replays its events compacted, from the start or after any seq', async () => {
    const hold = gate();
    const { agent } = agentWith([{ text: ['Hel', 'lo'], hold: hold.wait$ }]);
    const runs = localRuns({ agents: { helper: agent } });
    const { runId, steeringId } = await runs.start({
      agent: 'helper',
      threadId: 't1',
      input: 'hi',
      principal: 'alice',
    });
    expect(steeringId).toBeUndefined();
    // Read while the run is live (held before its first delta): each delta as it came.
    const reading = events(runs, runId);
    hold.open();
    const live = await reading;
    expect(types(live)).toEqual([
      'run_started',
      'turn_started',
      'model_request_started',
      'text_delta',
      'text_delta',
      'model_response_completed',
      'turn_completed',
      'run_completed',
    ]);
    // Read once it ended, replay 'compact': the two deltas (seq 3 and 4) are one event, its seq the last one's.
    const all = await events(runs, runId);
    expect(all).toEqual([...live.slice(0, 3), all[3], ...live.slice(5)]);
    expect(types(all)).toEqual([
      'run_started',
      'turn_started',
      'model_request_started',
      'text_delta',
      'model_response_completed',
      'turn_completed',
      'run_completed',
    ]);
    expect(all.map((e) => e.seq)).toEqual([0, 1, 2, 4, 5, 6, 7]);
    expect(all[3]).toMatchObject({ type: 'text_delta', seq: 4, delta: 'Hello', fromSeq: 3, offsets: [0, 3] });
    expect(all.every((e) => e.runId === runId)).toBe(true);
    // After seq 3 (the first delta seen), the rest of the text as the second delta was emitted live.
    const afterFirst = await events(runs, runId, 'alice', 3);
    expect(afterFirst[0]).toEqual({ type: 'text_delta', runId, seq: 4, turn: 1, at: all[3]!.at, delta: 'lo' });
    expect(afterFirst.slice(1)).toEqual(all.slice(4));
    expect(await events(runs, runId, 'alice', 4)).toEqual(all.slice(4));
    expect(await events(runs, runId, 'alice', 7)).toEqual([]);
    expect(await events(runs, runId, 'alice', -1)).toEqual(all);
  });

  it("keeps each thread its own session: the second run sees the first one's history", async () => {
    const { agent, model } = agentWith(['one', 'two']);
    const runs = localRuns({ agents: { helper: agent } });
    const first = await runs.start({ agent: 'helper', threadId: 't1', input: 'a', principal: 'alice' });
    await events(runs, first.runId);
    const second = await runs.start({ agent: 'helper', threadId: 't1', input: 'b', principal: 'alice' });
    await events(runs, second.runId);
    expect(userTexts(model.requests[1]!.items)).toEqual(['a', 'b']);
    expect(model.requests[1]!.items.map((i) => i.type)).toEqual(['user', 'assistant', 'user']);
  });

  it('Items whose ids the session holds are left out; a contradicting id → HistoryConflictError', async () => {
    const { agent, model } = agentWith(['one', 'two']);
    const runs = localRuns({ agents: { helper: agent } });
    const u1: Item = { type: 'user', id: 'u1', text: 'first' };
    const r1 = await runs.start({ agent: 'helper', threadId: 't', input: [u1], principal: 'alice' });
    await events(runs, r1.runId);
    const u2: Item = { type: 'user', id: 'u2', text: 'second' };
    const r2 = await runs.start({ agent: 'helper', threadId: 't', input: [u1, u2], principal: 'alice' });
    await events(runs, r2.runId);
    expect(userTexts(model.requests[1]!.items)).toEqual(['first', 'second']);

    const edited: Item = { type: 'user', id: 'u1', text: 'edited' };
    const conflict = runs.start({ agent: 'helper', threadId: 't', input: [edited], principal: 'alice' });
    await expect(conflict).rejects.toBeInstanceOf(HistoryConflictError);
    await expect(conflict).rejects.toMatchObject({ field: 'input[0]', id: 'u1', code: 'history_conflict' });
    const nothingNew = runs.start({ agent: 'helper', threadId: 't', input: [u1, u2], principal: 'alice' });
    await expect(nothingNew).rejects.toMatchObject({ name: 'ConfigurationError', field: 'input' });
    expect(model.requests).toHaveLength(2);
  });

  it('uses the given store, one session id per principal and thread', async () => {
    const { agent } = agentWith(['one', 'two']);
    const sessions = new Map<string, MemorySession>();
    const asked: string[] = [];
    const store = {
      session: async (id: string) => {
        asked.push(id);
        if (!sessions.has(id)) sessions.set(id, new MemorySession());
        return sessions.get(id)!;
      },
    };
    const runs = localRuns({ agents: { helper: agent }, sessions: store });
    const a = await runs.start({ agent: 'helper', threadId: 'x/y', input: 'from alice', principal: 'alice' });
    await events(runs, a.runId);
    const b = await runs.start({ agent: 'helper', threadId: 'x/y', input: 'from bob', principal: 'b o b' });
    await events(runs, b.runId, 'b o b');
    expect(asked).toEqual(['alice/x%2Fy', 'b%20o%20b/x%2Fy']);
    expect(userTexts(sessions.get('alice/x%2Fy')!.items)).toEqual(['from alice']);
    expect(userTexts(sessions.get('b%20o%20b/x%2Fy')!.items)).toEqual(['from bob']);
  });

  it('bad requests reject with the field named; an unknown agent with AgentNotFoundError', async () => {
    const { agent } = agentWith([]);
    const runs = localRuns({ agents: { helper: agent } });
    const base = { agent: 'helper', threadId: 't', input: 'x', principal: 'alice' };
    await expect(runs.start({ ...base, agent: 'nope' })).rejects.toEqual(new AgentNotFoundError('nope'));
    await expect(runs.start({ ...base, agent: 'toString' })).rejects.toBeInstanceOf(AgentNotFoundError);
    await expect(runs.start({ ...base, threadId: '' })).rejects.toMatchObject({ field: 'threadId' });
    await expect(runs.start({ ...base, principal: 3 as never })).rejects.toMatchObject({ field: 'principal' });
    await expect(runs.start({ ...base, input: 5 as never })).rejects.toMatchObject({ field: 'input' });
    await expect(runs.start({ ...base, ifBusy: 'later' as never })).rejects.toMatchObject({ field: 'ifBusy' });
    await expect(runs.start({ ...base, input: [{ type: 'user' }] as never })).rejects.toMatchObject({
      field: 'input[0]',
    });
    for (const ifBusy of ['enqueue', 'interrupt', 'rollback'] as const) {
      const p = runs.start({ ...base, ifBusy });
      await expect(p).rejects.toBeInstanceOf(NotSupportedError);
      await expect(p).rejects.toMatchObject({ field: 'ifBusy', code: 'not_supported' });
    }
    expect(() => localRuns({ agents: null as never })).toThrow(ConfigurationError);
    expect(() => localRuns({ agents: {}, retainFinishedRuns: -1 })).toThrow('options.retainFinishedRuns');
    expect(() => localRuns({ agents: {}, sessions: {} as never })).toThrow('options.sessions.session');
  });
});

describe('localRuns: a live run', () => {
  /** A run whose first model call waits for `hold`, then answers; the second call answers 'after'. */
  function heldRun() {
    const hold = gate();
    const { agent, model } = agentWith([{ text: 'working', hold: hold.wait$, toolCalls: [] }, 'after']);
    return { hold, model, runs: localRuns({ agents: { helper: agent } }) };
  }

  it("ifBusy 'steer' (default) pushes input into the live run: its runId, a steering id, delivered once", async () => {
    const { hold, model, runs } = heldRun();
    const first = await runs.start({ agent: 'helper', threadId: 't', input: 'start', principal: 'alice' });
    const steer = await runs.start({
      agent: 'helper',
      threadId: 't',
      principal: 'alice',
      input: [{ type: 'user', id: 'client-7', text: 'also this' }],
    });
    expect(steer).toEqual({ runId: first.runId, steeringId: 'client-7' });
    // The same message sent again while the run holds it is not pushed twice.
    await expect(
      runs.start({
        agent: 'helper',
        threadId: 't',
        principal: 'alice',
        input: [{ type: 'user', id: 'client-7', text: 'also this' }],
      }),
    ).rejects.toMatchObject({ field: 'input' });
    hold.open();
    const all = await events(runs, first.runId);
    expect(all.filter((e) => e.type === 'user_message_injected')).toMatchObject([
      { id: 'client-7', content: 'also this' },
    ]);
    expect(userTexts(model.requests[1]!.items)).toEqual(['start', 'also this']);
    expect(all.at(-1)).toMatchObject({ type: 'run_completed', output: 'after' });
  });

  it("ifBusy 'reject' rejects with ThreadBusyError naming the live run", async () => {
    const { hold, runs } = heldRun();
    const first = await runs.start({ agent: 'helper', threadId: 't', input: 'start', principal: 'alice' });
    const busy = runs.start({ agent: 'helper', threadId: 't', input: 'more', principal: 'alice', ifBusy: 'reject' });
    await expect(busy).rejects.toEqual(new ThreadBusyError('t', first.runId));
    // Another principal's thread of the same name is another thread.
    const other = await runs.start({
      agent: 'helper',
      threadId: 't',
      input: 'mine',
      principal: 'bob',
      ifBusy: 'reject',
    });
    expect(other.runId).not.toBe(first.runId);
    hold.open();
    await events(runs, first.runId);
  });

  it('two starts on one thread at once: exactly one run, the other input steers it', async () => {
    const { hold, runs } = heldRun();
    const [a, b] = await Promise.all([
      runs.start({ agent: 'helper', threadId: 't', input: 'a', principal: 'alice' }),
      runs.start({ agent: 'helper', threadId: 't', input: 'b', principal: 'alice' }),
    ]);
    expect(b.runId).toBe(a.runId);
    expect(a.steeringId).toBeUndefined();
    expect(typeof b.steeringId).toBe('string');
    hold.open();
    const all = await events(runs, a.runId);
    expect(all.filter((e) => e.type === 'user_message_injected')).toMatchObject([{ id: b.steeringId, content: 'b' }]);
  });

  it('cancel: true once run_cancelled was emitted, then false; steer after the end → RunNotLiveError', async () => {
    const { runs } = heldRun();
    const { runId } = await runs.start({ agent: 'helper', threadId: 't', input: 'start', principal: 'alice' });
    const seen: RunEvent[] = [];
    runs.events(runId, { principal: 'alice' }).subscribe((e) => seen.push(e));
    await firstValueFrom(runs.events(runId, { principal: 'alice' }).pipe(filter((e) => e.type === 'text_delta')));
    const reason = { type: 'user_stop' };
    const cancelled = await runs.cancel(runId, reason, 'alice');
    expect(cancelled).toBe(true);
    expect(seen.at(-1)).toMatchObject({ type: 'run_cancelled', reason, phase: 'model_stream' });
    expect(await runs.cancel(runId, 'again', 'alice')).toBe(false);
    await expect(runs.steer(runId, 'late', 'alice')).rejects.toEqual(new RunNotLiveError(runId));
  });

  it('steer returns the injected id; withdraw takes a queued one back (true once), never delivered', async () => {
    const { hold, model, runs } = heldRun();
    const { runId } = await runs.start({ agent: 'helper', threadId: 't', input: 'start', principal: 'alice' });
    const kept = await runs.steer(runId, 'keep me', 'alice');
    const dropped = await runs.steer(runId, 'drop me', 'alice');
    expect(await runs.withdraw(runId, dropped.id, 'alice')).toBe(true);
    expect(await runs.withdraw(runId, dropped.id, 'alice')).toBe(false);
    expect(await runs.withdraw(runId, 'no-such-id', 'alice')).toBe(false);
    hold.open();
    const all = await events(runs, runId);
    expect(all.filter((e) => e.type === 'user_message_injected')).toMatchObject([{ id: kept.id, content: 'keep me' }]);
    expect(userTexts(model.requests[1]!.items)).toEqual(['start', 'keep me']);
    expect(await runs.withdraw(runId, kept.id, 'alice')).toBe(false); // delivered
  });

  it("stop is the run's graceful stop (true once, then false)", async () => {
    const { hold, runs } = heldRun();
    const { runId } = await runs.start({ agent: 'helper', threadId: 't', input: 'start', principal: 'alice' });
    await expect(runs.stop(runId, { at: 'turn_end' }, 'alice')).resolves.toBe(true);
    await expect(runs.stop(runId, { at: 'turn_end' }, 'alice')).resolves.toBe(false);
    hold.open();
    expect((await events(runs, runId)).at(-1)).toMatchObject({ type: 'run_completed', stopReason: 'completed' });
  });

  it('decide approves or rejects a call awaiting approval ("approvals"): true once, false after; bad decisions name the field', async () => {
    const gated = tool({
      name: 'deploy',
      description: 'd',
      parameters: z.object({}),
      needsApproval: true,
      execute: () => 'deployed',
    });
    const model = scriptedModel([
      {
        toolCalls: [
          { name: 'deploy', callId: 'd1' },
          { name: 'deploy', callId: 'd2' },
        ],
      },
      'finished',
    ]);
    const agent = defineAgent({ name: 'helper', instructions: '', model, tools: [gated] });
    const runs = localRuns({ agents: { helper: agent } });
    const { runId } = await runs.start({ agent: 'helper', threadId: 't', input: 'ship it', principal: 'alice' });
    // Both calls await approval once the second one's tool_approval_requested is out.
    await firstValueFrom(
      runs
        .events(runId, { principal: 'alice' })
        .pipe(filter((e) => e.type === 'tool_approval_requested' && e.callId === 'd2')),
    );
    await expect(runs.decide(runId, 'd1', { approve: 'yes' } as never, 'alice')).rejects.toMatchObject({
      field: 'approve',
    });
    await expect(runs.decide(runId, 'd1', { approve: false } as never, 'alice')).rejects.toMatchObject({
      field: 'reason',
    });
    await expect(runs.decide(runId, 'd1', { approve: true }, 'bob')).rejects.toBeInstanceOf(RunNotFoundError);
    expect(await runs.decide(runId, 'nope', { approve: true }, 'alice')).toBe(false);
    expect(await runs.decide(runId, 'd1', { approve: true }, 'alice')).toBe(true);
    expect(await runs.decide(runId, 'd1', { approve: false, reason: 'late' }, 'alice')).toBe(false); // decided already
    expect(await runs.decide(runId, 'd2', { approve: false, reason: 'not on fridays' }, 'alice')).toBe(true);
    const all = await events(runs, runId);
    expect(all.filter((e) => e.type === 'tool_call_completed')).toMatchObject([{ callId: 'd1', output: 'deployed' }]);
    expect(all.filter((e) => e.type === 'tool_call_failed')).toMatchObject([
      { callId: 'd2', error: { name: 'ToolCallRejectedError', message: 'the call was rejected: not on fridays' } },
    ]);
    expect(all.at(-1)).toMatchObject({ type: 'run_completed', output: 'finished' });
    expect(await runs.decide(runId, 'd1', { approve: true }, 'alice')).toBe(false); // the run has ended
  });
});

describe('localRuns: another principal, an unknown run', () => {
  it("every method rejects with RunNotFoundError for another principal's run and for an unknown id", async () => {
    const hold = gate();
    const { agent } = agentWith([{ text: 'x', hold: hold.wait$ }]);
    const runs = localRuns({ agents: { helper: agent } });
    const { runId } = await runs.start({ agent: 'helper', threadId: 't', input: 'secret', principal: 'alice' });
    for (const [id, principal] of [
      [runId, 'bob'],
      ['unknown', 'alice'],
    ] as const) {
      const notFound = new RunNotFoundError(id);
      await expect(firstValueFrom(runs.events(id, { principal }))).rejects.toEqual(notFound);
      await expect(runs.cancel(id, 'x', principal)).rejects.toEqual(notFound);
      await expect(runs.stop(id, { at: 'turn_end' }, principal)).rejects.toEqual(notFound);
      await expect(runs.steer(id, 'x', principal)).rejects.toEqual(notFound);
      await expect(runs.withdraw(id, 'x', principal)).rejects.toEqual(notFound);
      await expect(runs.decide(id, 'c', { approve: false, reason: 'no' }, principal)).rejects.toEqual(notFound);
    }
    hold.open();
    const all = await lastValueFrom(runs.events(runId, { principal: 'alice' }).pipe(toArray()));
    expect(all.at(-1)).toMatchObject({ type: 'run_completed' });
  });

  it('retainFinishedRuns: the oldest finished run is forgotten (RunNotFoundError), a newer one kept', async () => {
    const { agent } = agentWith(['one', 'two']);
    const runs = localRuns({ agents: { helper: agent }, retainFinishedRuns: 1 });
    const a = await runs.start({ agent: 'helper', threadId: 't', input: 'a', principal: 'alice' });
    await events(runs, a.runId);
    const b = await runs.start({ agent: 'helper', threadId: 't', input: 'b', principal: 'alice' });
    await events(runs, b.runId);
    await expect(events(runs, a.runId)).rejects.toEqual(new RunNotFoundError(a.runId));
    expect((await events(runs, b.runId)).at(-1)?.type).toBe('run_completed');
  });

  it('events rejects a bad afterSeq naming it', async () => {
    const { agent } = agentWith(['one']);
    const runs = localRuns({ agents: { helper: agent } });
    const { runId } = await runs.start({ agent: 'helper', threadId: 't', input: 'a', principal: 'alice' });
    await expect(events(runs, runId, 'alice', 1.5)).rejects.toMatchObject({ field: 'afterSeq' });
  });
});
