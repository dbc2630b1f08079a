import { NEVER, concat, lastValueFrom, of, toArray } from 'rxjs';
import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import {
  CancelSignal,
  MemorySession,
  commitPartial,
  defineAgent,
  run,
  start,
  tool,
  type Item,
  type ModelEvent,
  type RunEvent,
  type Session,
  type TerminalEvent,
} from '../src/index.js';
import { unpairedToolCalls } from '../src/items.js';
import {
  collectEvents,
  gate,
  scriptedModel,
  sequentialIds,
  type Gate,
  type ScriptedStep,
} from '../src/testing/index.js';

/** What a session and `partial` hold after a run, cancelled or not. */

/** A MemorySession whose append is slow I/O: it lands a turn of the event loop later, after every microtask. */
class SlowAppendSession implements Session {
  readonly inner = new MemorySession();
  append(items: readonly Item[]) {
    return new Promise<void>((resolve) =>
      setImmediate(() => {
        this.inner.append(items);
        resolve();
      }),
    );
  }
  load() {
    return this.inner.load();
  }
}

const paired = (items: readonly Item[]) => expect(unpairedToolCalls(items)).toEqual([]);
type Remains = Extract<TerminalEvent, { partial: unknown }>;

/**
 * The session's append is slow (simulated) I/O, a turn of the event loop; the model calls a tool,
 * then answers. Completed: the session holds input, call, result and answer by
 * the time the stream ends. Cancelled during the tool: the session is
 * untouched (guarantee 6: scratchpad: only a completed run commits), `partial`
 * is a paired prefix, and `commitPartial` writes it fully before it settles.
 */
describe('persistence is never cut off by teardown', () => {
  const steps: ScriptedStep[] = [{ toolCalls: [{ name: 'lookup', arguments: { q: 'x' } }] }, { text: 'the answer' }];

  it('normal run: when the stream ends, the session already holds input, tool call, tool result and final answer', async () => {
    const session = new SlowAppendSession();
    const lookup = tool({
      name: 'lookup',
      description: 'd',
      parameters: z.object({ q: z.string() }),
      execute: ({ q }) => `found ${q}`,
    });
    const agent = defineAgent({ name: 'a', instructions: 'i', model: scriptedModel(steps), tools: [lookup] });
    const events = await lastValueFrom(
      run(agent, 'question', { session, idGenerator: sequentialIds() }).pipe(toArray()),
    );
    const items = session.inner.items; // read immediately
    expect(events.at(-1)).toMatchObject({ type: 'run_completed', output: 'the answer' });
    expect(session.inner.writes).toBe(1);
    expect(items).toEqual([
      { type: 'user', id: 'item-1', text: 'question' },
      {
        type: 'assistant',
        id: 'item-2',
        text: '',
        toolCalls: [{ callId: 'call_1_1', name: 'lookup', arguments: '{"q":"x"}' }],
      },
      { type: 'tool_result', callId: 'call_1_1', output: 'found x', isError: false },
      { type: 'assistant', id: 'item-3', text: 'the answer', toolCalls: [] },
    ]);
  });

  it('cancel variant: the session is untouched; partial is a paired prefix; commitPartial persists it fully before settling', async () => {
    const session = new SlowAppendSession();
    const cancel = new CancelSignal();
    const lookup = tool({
      name: 'lookup',
      description: 'd',
      parameters: z.object({ q: z.string() }),
      execute: () => {
        queueMicrotask(() => cancel.cancel('user stop'));
        return new Promise(() => {});
      },
    });
    const agent = defineAgent({ name: 'a', instructions: 'i', model: scriptedModel(steps), tools: [lookup] });
    const events = await collectEvents(run(agent, 'question', { session, cancel, idGenerator: sequentialIds() }));
    const terminal = events.at(-1) as Remains;
    expect(terminal).toMatchObject({ type: 'run_cancelled', phase: 'tool_call', reason: 'user stop' });
    expect(session.inner.writes).toBe(0);
    expect(terminal.partial.map((i) => i.type)).toEqual(['user', 'assistant', 'tool_result']);
    expect(terminal.partial[2]).toMatchObject({ callId: 'call_1_1', interrupted: true });
    paired(terminal.partial);
    await commitPartial(session, terminal.partial);
    expect(session.inner.writes).toBe(1);
    expect(session.inner.items).toEqual(terminal.partial);
  });
});

/**
 * A run cancelled while a gated tool runs (alone, or beside a sibling that
 * finished) leaves a history where every call has exactly one result
 * (`interrupted` for the cut one); a new run on it plus "continue" is accepted
 * ("the history is valid on the wire").
 */
describe('no dangling tool call in the history of a cancelled run', () => {
  async function cancelledHistory(parallel: boolean): Promise<{ partial: readonly Item[]; events: RunEvent[] }> {
    const slowGate: Gate<string> = gate();
    const cancel = new CancelSignal();
    const slow = tool({
      name: 'slow',
      description: 'd',
      parameters: z.object({}),
      execute: () => {
        queueMicrotask(() => queueMicrotask(() => cancel.cancel('stop')));
        return slowGate.promise;
      },
    });
    const fast = tool({ name: 'fast', description: 'd', parameters: z.object({}), execute: () => 'fast done' });
    const calls = parallel ? [{ name: 'fast' }, { name: 'slow' }] : [{ name: 'slow' }];
    const agent = defineAgent({
      name: 'a',
      instructions: 'i',
      model: scriptedModel([{ toolCalls: calls }]),
      tools: [slow, fast],
      ...(parallel ? { parallelToolCalls: { maxConcurrency: 2 } } : {}),
    });
    const handle = start(agent, 'task', { cancel });
    const err = await handle.result.then(
      () => undefined,
      (e: unknown) => e,
    );
    const events = await lastValueFrom(handle.events$.pipe(toArray()));
    slowGate.open('late'); // the late result is ignored
    expect(err).toMatchObject({ name: 'RunCancelledError' });
    return { partial: (err as { partial: readonly Item[] }).partial, events };
  }

  for (const parallel of [false, true]) {
    it(`${parallel ? 'two parallel calls, one finished first' : 'one gated call'}: every call paired once; a new run with that history + "continue" is accepted`, async () => {
      const { partial, events } = await cancelledHistory(parallel);
      expect(events.at(-1)).toMatchObject({ type: 'run_cancelled' });
      const calls = partial.flatMap((i) => (i.type === 'assistant' ? i.toolCalls : []));
      expect(calls).toHaveLength(parallel ? 2 : 1);
      for (const c of calls)
        expect(partial.filter((i) => i.type === 'tool_result' && i.callId === c.callId)).toHaveLength(1);
      const slowResult = partial.find((i) => i.type === 'tool_result' && i.callId === calls.at(-1)!.callId);
      expect(slowResult).toMatchObject({ interrupted: true });
      if (parallel)
        expect(partial.find((i) => i.type === 'tool_result' && i.callId === calls[0]!.callId)).toMatchObject({
          output: 'fast done',
          isError: false,
        });

      const model = scriptedModel(['continuing']);
      const next = await collectEvents(
        run(defineAgent({ name: 'a', instructions: 'i', model }), [
          ...partial,
          { type: 'user', id: 'u2', text: 'continue' },
        ]),
      );
      expect(next.at(-1)).toMatchObject({ type: 'run_completed', output: 'continuing' });
      expect(model.requests).toHaveLength(1);
    });
  }
});

/**
 * The model streams "Hello", " world", then blocks; the caller cancels after
 * both deltas. `partial` holds the text once, marked interrupted, nothing
 * after the cancel; the session gets it only through `commitPartial`.
 */
describe('streamed text survives a cancel (in partial; in the session only after commitPartial)', () => {
  it('"Hello world" kept once, marked interrupted; nothing after the cancel; terminal is cancelled', async () => {
    const session = new MemorySession();
    const cancel = new CancelSignal();
    // M streams "Hello" and " world", then blocks; anything after the cancel is never read.
    const model = scriptedModel([
      { events: () => concat(of(delta('Hello'), delta(' world')), NEVER, of(delta(' LATE'))) },
    ]);
    const agent = defineAgent({ name: 'a', instructions: 'i', model });
    const deltas: string[] = [];
    const events = await new Promise<RunEvent[]>((resolve) => {
      const out: RunEvent[] = [];
      run(agent, 'greet me', { session, cancel, idGenerator: sequentialIds() }).subscribe({
        next: (e) => {
          out.push(e);
          if (e.type === 'text_delta') deltas.push(e.delta);
          if (deltas.length === 2 && e.type === 'text_delta') cancel.cancel('stop');
        },
        complete: () => resolve(out),
      });
    });
    const terminal = events.at(-1) as Remains;
    expect(terminal).toMatchObject({ type: 'run_cancelled', phase: 'model_stream' });
    expect(deltas).toEqual(['Hello', ' world']);
    expect(session.writes).toBe(0);
    expect(session.items).toEqual([]);
    const expected: Item[] = [
      { type: 'user', id: 'item-1', text: 'greet me' },
      { type: 'assistant', id: 'item-2', text: 'Hello world', interrupted: true, toolCalls: [] },
    ];
    expect(terminal.partial).toEqual(expected);
    await commitPartial(session, terminal.partial);
    expect(session.load()).toEqual(expected); // reloaded: once, no duplicate
  });
});

function delta(text: string): ModelEvent {
  return { type: 'text_delta', delta: text };
}
