import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  CancelSignal,
  defineAgent,
  run,
  tool,
  type HookReturn,
  type RunCancelled,
  type RunEvent,
} from '../src/index.js';
import { collectEvents, scriptedModel } from '../src/testing/index.js';

/**
 * A `beforeToolCall` hook cancels the run while a batch is prepared. The
 * model asks for two calls, w1 and w2, to a side-effecting `write`
 * tool; the hook cancels (through the caller's token or `ctx.cancel`,
 * synchronously or after an await) when it sees w2. Guarantee 2: nothing
 * starts after a cancel: no write runs and no `tool_call_started` is emitted;
 * both calls appear in `partial` with a synthetic interrupted result, so every
 * call is paired; the terminal is `run_cancelled` with phase `hook`
 * (checkpoint 11: awaited hook).
 */
type Canceller = 'caller token T' | 'ctx.cancel';
type HookKind = 'sync' | 'promise' | 'promise, cancel after an await';

function scenario(opts: { who: Canceller; kind: HookKind; maxConcurrency?: number; cancelOn: string }) {
  const executions: string[] = [];
  const seen: string[] = [];
  const T = new CancelSignal();
  const write = tool({
    name: 'write',
    description: 'side-effecting write',
    parameters: z.object({ id: z.string() }),
    execute: ({ id }) => (executions.push(id), `wrote ${id}`),
  });
  const model = scriptedModel([
    {
      toolCalls: [
        { name: 'write', arguments: { id: 'w1' }, callId: 'w1' },
        { name: 'write', arguments: { id: 'w2' }, callId: 'w2' },
      ],
    },
    'never asked',
  ]);
  const agent = defineAgent({
    name: 'c14',
    instructions: '',
    model,
    tools: [write],
    ...(opts.maxConcurrency ? { parallelToolCalls: { maxConcurrency: opts.maxConcurrency } } : {}),
    hooks: {
      beforeToolCall: ({ call, cancel }): HookReturn<void> => {
        seen.push(call.callId);
        const fire = () => {
          if (call.callId === opts.cancelOn) (opts.who === 'ctx.cancel' ? cancel : T).cancel(`hook saw ${call.callId}`);
        };
        if (opts.kind === 'sync') return fire();
        if (opts.kind === 'promise') return Promise.resolve(fire());
        return Promise.resolve()
          .then(() => new Promise((r) => setImmediate(r))) // a turn of the event loop, not a clock
          .then(fire);
      },
    },
  });
  return { T, agent, model, executions, seen };
}

const cases: { who: Canceller; kind: HookKind; maxConcurrency?: number }[] = [
  { who: 'caller token T', kind: 'sync', maxConcurrency: 2 },
  { who: 'caller token T', kind: 'promise', maxConcurrency: 2 },
  { who: 'caller token T', kind: 'promise, cancel after an await', maxConcurrency: 2 },
  { who: 'ctx.cancel', kind: 'sync', maxConcurrency: 2 },
  { who: 'ctx.cancel', kind: 'promise, cancel after an await', maxConcurrency: 1 },
  { who: 'caller token T', kind: 'sync' }, // sequential dispatch: the same rule
];

describe('a beforeToolCall hook cancels the run while a parallel batch is prepared', () => {
  for (const c of cases) {
    const mode = c.maxConcurrency ? `pool of ${c.maxConcurrency}` : 'sequential';
    it(`no write starts after the cancel; both calls paired as interrupted (${c.who}, ${c.kind} hook, ${mode})`, async () => {
      const s = scenario({ ...c, cancelOn: 'w2' });
      const events: RunEvent[] = await collectEvents(run(s.agent, 'go', { cancel: s.T }));
      expect(s.executions).toEqual([]);
      expect(s.seen).toEqual(['w1', 'w2']);
      expect(events.filter((e) => e.type === 'tool_call_started')).toEqual([]);
      const terminals = events.filter(
        (e) => e.type === 'run_completed' || e.type === 'run_cancelled' || e.type === 'run_failed',
      );
      expect(terminals).toHaveLength(1);
      const terminal = events.at(-1) as RunCancelled;
      expect(terminal).toMatchObject({ type: 'run_cancelled', reason: 'hook saw w2', phase: 'hook' });
      expect(terminal.partial.slice(1)).toEqual([
        expect.objectContaining({
          type: 'assistant',
          toolCalls: [expect.objectContaining({ callId: 'w1' }), expect.objectContaining({ callId: 'w2' })],
        }),
        expect.objectContaining({ type: 'tool_result', callId: 'w1', interrupted: true }),
        expect.objectContaining({ type: 'tool_result', callId: 'w2', interrupted: true }),
      ]);
      expect(s.model.requests).toHaveLength(1);
      // ctx.cancel is run-owned: it never fires the caller's token; T itself is re-armed by the run that saw it fire.
      expect(s.T.isCancelled).toBe(false);
    });
  }

  it('the hook cancelling on the first call: the second hook is not even asked, nothing starts', async () => {
    const s = scenario({ who: 'caller token T', kind: 'sync', maxConcurrency: 2, cancelOn: 'w1' });
    const events = await collectEvents(run(s.agent, 'go', { cancel: s.T }));
    expect(s.seen).toEqual(['w1']);
    expect(s.executions).toEqual([]);
    expect(events.at(-1)).toMatchObject({ type: 'run_cancelled', phase: 'hook' });
  });

  it('control: without a cancel both writes run once each', async () => {
    const s = scenario({ who: 'caller token T', kind: 'sync', maxConcurrency: 2, cancelOn: 'none' });
    const events = await collectEvents(run(s.agent, 'go', { cancel: s.T }));
    expect(s.executions).toEqual(['w1', 'w2']);
    expect(events.at(-1)).toMatchObject({ type: 'run_completed', output: 'never asked' });
  });
});
