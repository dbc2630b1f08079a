import { NEVER } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { z } from 'zod';
import { beforeEach, describe, expect, it } from 'vitest';
import {
  CancelSignal,
  Mailbox,
  MemorySession,
  ModelCallError,
  commitPartial,
  defineAgent,
  run,
  tool,
  type Item,
  type RunEvent,
  type RunOptions,
  type Session,
  type TerminalEvent,
} from '../src/index.js';
import { unpairedToolCalls } from '../src/items.js';
import { scriptedModel, sequentialIds, type ScriptedStep } from '../src/testing/index.js';

/**
 * `partial` on cancelled/failed terminals (guarantee 6): a consistent prefix,
 * every tool call paired (synthetic `interrupted: true` results), streamed
 * text kept and marked interrupted, a call whose arguments were still
 * streaming dropped; `commitPartial` commits once and withdraws given-back
 * items it contains; a resumed run from that history is a valid request.
 */

let ts: TestScheduler;
beforeEach(() => {
  ts = new TestScheduler((actual, expected) => expect(actual).toEqual(expected));
});

function setup(steps: (ScriptedStep | string)[], options: RunOptions = {}) {
  const model = scriptedModel(steps);
  const t = tool({
    name: 't',
    description: 'd',
    parameters: z.object({ n: z.number() }),
    execute: ({ n }) => ts.createColdObservable(`${'-'.repeat(n)}a|`, { a: `out${n}` }),
  });
  const agent = defineAgent({ name: 'a', instructions: 'i', model, tools: [t] });
  const cancel = new CancelSignal();
  const events: RunEvent[] = [];
  run(agent, 'go', { cancel, idGenerator: sequentialIds(), ...options }).subscribe((e) => events.push(e));
  const terminal = () => events.at(-1) as Extract<TerminalEvent, { partial: unknown }>;
  return { model, agent, cancel, events, terminal };
}
const user: Item = { type: 'user', id: 'item-1', text: 'go' };
const interrupted = (callId: string): Item => ({
  type: 'tool_result',
  callId,
  output: 'interrupted: the run was stopped before this call finished',
  isError: true,
  interrupted: true,
});

describe('partial (guarantee 6)', () => {
  it('streamed text is kept and marked interrupted; nothing after the cancel', () => {
    ts.run(() => {
      const s = setup([{ text: ['Hello', ' world', ' (never sent)'], deltaDelayMs: 2, hold: NEVER }]);
      ts.schedule(() => s.cancel.cancel('stop'), 3);
      ts.flush();
      expect(s.terminal()).toMatchObject({ type: 'run_cancelled', phase: 'model_stream' });
      expect(s.terminal().partial).toEqual([
        user,
        { type: 'assistant', id: 'item-2', text: 'Hello world', toolCalls: [], interrupted: true },
      ]);
    });
  });

  // Text the user saw before a failed stream stays in `partial` while the rescue has no answer yet.
  it('text streamed before a failed stream is kept when the cancel lands during the rescue', () => {
    ts.run(() => {
      const s = setup(
        [
          { text: ['Hello'], error: new ModelCallError('connection reset', { status: 503 }) },
          { text: 'Hello world', hold: NEVER },
        ],
        { retry: false },
      );
      ts.schedule(() => s.cancel.cancel('stop'), 3);
      ts.flush();
      expect(s.terminal()).toMatchObject({ type: 'run_cancelled', phase: 'rescue' });
      expect(s.terminal().partial).toEqual([
        user,
        { type: 'assistant', id: 'item-2', text: 'Hello', toolCalls: [], interrupted: true },
      ]);
    });
  });

  it('a tool call whose arguments were still streaming is dropped (its text kept)', () => {
    ts.run(({ cold }) => {
      const s = setup([
        {
          events: () =>
            cold('a-b-', {
              a: { type: 'text_delta', delta: 'Let me check' },
              b: { type: 'tool_call_delta', index: 0, callId: 'c1', name: 't', argumentsDelta: '{"n":' },
            }),
        },
      ]);
      ts.schedule(() => s.cancel.cancel('stop'), 3);
      ts.flush();
      expect(s.terminal().partial).toEqual(
        [user, { type: 'assistant', id: 'item-2', text: 'Let me check', toolCalls: [] }].map((i, k) =>
          k === 1 ? { ...i, interrupted: true } : i,
        ),
      );
      expect(unpairedToolCalls(s.terminal().partial)).toEqual([]);
    });
  });

  it('sequential batch cancelled in its 2nd call: finished call keeps its result, the others are paired as interrupted, in call order', () => {
    ts.run(() => {
      const s = setup([{ toolCalls: [1, 5, 1].map((n) => ({ name: 't', arguments: { n } })) }]);
      ts.schedule(() => s.cancel.cancel('stop'), 4);
      ts.flush();
      expect(s.terminal()).toMatchObject({ type: 'run_cancelled', phase: 'tool_call' });
      const [, assistant, ...results] = s.terminal().partial;
      expect(assistant).toMatchObject({
        type: 'assistant',
        toolCalls: [{ callId: 'call_1_1' }, { callId: 'call_1_2' }, { callId: 'call_1_3' }],
      });
      expect(results).toEqual([
        { type: 'tool_result', callId: 'call_1_1', output: 'out1', isError: false },
        interrupted('call_1_2'),
        interrupted('call_1_3'),
      ]);
      expect(s.events.filter((e) => e.type === 'tool_call_started')).toHaveLength(2);
    });
  });

  it('a failed run (max_turns) carries a complete prefix too', () => {
    ts.run(() => {
      const model = scriptedModel([{ toolCalls: [{ name: 't', arguments: { n: 1 } }] }]);
      const t = tool({ name: 't', description: 'd', parameters: z.object({ n: z.number() }), execute: () => 'r' });
      const events: RunEvent[] = [];
      run(defineAgent({ name: 'a', instructions: 'i', model, tools: [t], maxTurns: 1 }), 'go', {
        idGenerator: sequentialIds(),
      }).subscribe((e) => events.push(e));
      ts.flush();
      const last = events.at(-1) as Extract<TerminalEvent, { type: 'run_failed' }>;
      expect(last.stopReason).toBe('max_turns');
      expect(last.partial.map((i) => i.type)).toEqual(['user', 'assistant', 'tool_result']);
      expect(unpairedToolCalls(last.partial)).toEqual([]);
    });
  });
});

describe('commitPartial (guarantee 7: no steering lost or duplicated)', () => {
  it('commits once and withdraws only the given-back items the partial contains', async () => {
    const session = new MemorySession();
    const mailbox = new Mailbox({
      idGenerator: (() => {
        let n = 0;
        return () => `m${++n}`;
      })(),
    });
    let partial: readonly Item[] = [];
    ts.run(() => {
      mailbox.push('drained');
      const s = setup([{ text: 'x', hold: NEVER }], { mailbox, session });
      ts.schedule(() => mailbox.push('never drained'), 2);
      ts.schedule(() => s.cancel.cancel('stop'), 3);
      ts.flush();
      expect(s.terminal().undelivered.map((u) => u.content)).toEqual(['drained', 'never drained']);
      partial = s.terminal().partial;
    });
    expect(session.writes).toBe(0);
    const committing = commitPartial(session, partial, mailbox);
    // MemorySession's append is synchronous: the write and the withdrawal are done before commitPartial returns.
    expect(mailbox.peek().map((t) => t.content)).toEqual(['never drained']);
    expect(await committing).toEqual(['m1']);
    expect(session.writes).toBe(1);
    expect(session.items).toEqual(partial);
    // "Arrival order": 'drained' was queued before the run, so it precedes the input.
    expect(session.items.filter((i) => i.type === 'user').map((i) => i.id)).toEqual(['m1', 'item-1']);
    expect(mailbox.peek().map((t) => t.content)).toEqual(['never drained']);
  });

  it('a failing append rejects and leaves the mailbox untouched; an empty partial writes nothing', async () => {
    const mailbox = new Mailbox({ idGenerator: () => 'm1' });
    mailbox.push('x');
    const failing: Session = { load: () => [], append: () => Promise.reject(new Error('io')) };
    await expect(commitPartial(failing, [{ type: 'user', id: 'm1', text: 'x' }], mailbox)).rejects.toThrow('io');
    expect(mailbox.size).toBe(1);
    const session = new MemorySession();
    expect(await commitPartial(session, [])).toEqual([]);
    expect(session.writes).toBe(0);
    await expect(commitPartial(session, 'nope' as never)).rejects.toThrow(TypeError);
  });

  it('a run resumed from the committed partial plus a new user message is a valid request (every call paired)', async () => {
    const session = new MemorySession();
    let partial: readonly Item[] = [];
    ts.run(() => {
      const s = setup(
        [
          {
            toolCalls: [
              { name: 't', arguments: { n: 5 } },
              { name: 't', arguments: { n: 5 } },
            ],
          },
        ],
        { session },
      );
      ts.schedule(() => s.cancel.cancel('stop'), 2);
      ts.flush();
      partial = s.terminal().partial;
    });
    await commitPartial(session, partial);
    expect(unpairedToolCalls(session.items)).toEqual([]);
    ts.run(() => {
      const s = setup(['resumed'], { session });
      ts.flush();
      expect(s.terminal()).toMatchObject({ type: 'run_completed', output: 'resumed' });
      expect(s.model.requests[0]!.items).toEqual([...partial, { type: 'user', id: 'item-1', text: 'go' }]);
    });
    // The validator is real: the same history without the synthetic results is refused by the model...
    const unpaired = partial.filter((i) => i.type !== 'tool_result');
    let refused: unknown;
    const direct = scriptedModel(['x']).call({ instructions: '', items: unpaired, tools: [], stream: false });
    direct.subscribe({ error: (e) => (refused = e) });
    expect(refused).toMatchObject({ name: 'ModelCallError', status: 400 });
    // ...and a run loading it pairs each call with an interrupted result before sending it
    // ("the history is valid on the wire").
    ts.run(() => {
      const s = setup(['x'], { session: new MemorySession(unpaired) });
      ts.flush();
      expect(s.terminal()).toMatchObject({ type: 'run_completed', output: 'x' });
      expect(s.model.requests[0]!.items).toEqual([...partial, { type: 'user', id: 'item-1', text: 'go' }]);
    });
  });
});
