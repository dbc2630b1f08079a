/**
 * Every terminal event says why the run stopped: `stopReason` is on run_completed ('completed'),
 * run_cancelled ('cancelled') and run_failed (its failure reason), and the errors `handle.result`
 * rejects with carry the same value. The stop reasons are exactly the ones StopReasonSchema lists.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  CancelSignal,
  Mailbox,
  RunCancelledError,
  RunCompletedSchema,
  RunCancelledSchema,
  RunFailedError,
  RunFailedSchema,
  StopReasonSchema,
  defineAgent,
  run,
  start,
  tool,
  type TerminalEvent,
} from '../src/index.js';
import { collectEvents, scriptedModel, sequentialIds } from '../src/testing/index.js';

const agentOf = (steps: Parameters<typeof scriptedModel>[0], extra: Partial<Parameters<typeof defineAgent>[0]> = {}) =>
  defineAgent({ name: 'a', instructions: '', model: scriptedModel(steps), ...extra });

const terminal = async (events: Promise<unknown[]>): Promise<TerminalEvent> => (await events).at(-1) as TerminalEvent;

describe('stopReason on every terminal event', () => {
  it('the stop reasons are exactly: completed, stopped, needs_approval, budget, cancelled, the five failures, output_invalid, worker_lost, guardrail', () => {
    expect(StopReasonSchema.options).toEqual([
      'completed',
      'stopped',
      'needs_approval',
      'budget',
      'cancelled',
      'max_turns',
      'model_error',
      'configuration_error',
      'internal_error',
      'session_error',
      'output_invalid',
      'worker_lost',
      'guardrail',
    ]);
  });

  it("run_completed carries stopReason 'completed', and handle.result's RunResult stays as it was", async () => {
    const ended = await terminal(collectEvents(run(agentOf(['hi']), 'q', { idGenerator: sequentialIds() })));
    expect(ended).toMatchObject({ type: 'run_completed', stopReason: 'completed', output: 'hi', finishReason: 'stop' });
    expect(RunCompletedSchema.parse(ended)).toEqual(ended);
  });

  it("run_cancelled carries stopReason 'cancelled', and so does RunCancelledError", async () => {
    const cancel = new CancelSignal();
    cancel.cancel('stop');
    const ended = await terminal(collectEvents(run(agentOf(['never']), 'q', { cancel })));
    expect(ended).toMatchObject({
      type: 'run_cancelled',
      stopReason: 'cancelled',
      reason: 'stop',
      phase: 'turn_entry',
    });
    expect(RunCancelledSchema.parse(ended)).toEqual(ended);
    cancel.cancel('again');
    const error = await start(agentOf(['never']), 'q', { cancel }).result.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RunCancelledError);
    expect(error).toMatchObject({ stopReason: 'cancelled', reason: 'again', phase: 'turn_entry' });
  });

  it('run_failed carries its reason: max_turns, model_error, configuration_error, internal_error', async () => {
    const loop = tool({ name: 'loop', description: '', parameters: z.object({}), execute: () => 'again' });
    const maxTurns = await terminal(
      collectEvents(run(agentOf([{ toolCalls: [{ name: 'loop' }] }], { tools: [loop], maxTurns: 1 }), 'q')),
    );
    expect(maxTurns).toMatchObject({ type: 'run_failed', stopReason: 'max_turns', error: { name: 'MaxTurnsError' } });

    const plainError = await terminal(
      collectEvents(run(agentOf([{ error: new Error('boom') }, 'x']), 'q', { retry: false })),
    );
    expect(plainError).toMatchObject({ type: 'run_failed', stopReason: 'internal_error', error: { message: 'boom' } });

    const mailbox = new Mailbox();
    mailbox.acquire({}); // another owner holds it
    const busy = await terminal(collectEvents(run(agentOf(['x']), 'q', { mailbox })));
    expect(busy).toMatchObject({
      type: 'run_failed',
      stopReason: 'configuration_error',
      error: { name: 'ConcurrentRunError' },
    });

    const hooks = {
      turnStarted: () => {
        throw new Error('hook broke');
      },
    };
    const hookError = await terminal(collectEvents(run(agentOf(['x']), 'q', { hooks })));
    expect(hookError).toMatchObject({ type: 'run_failed', stopReason: 'internal_error', error: { name: 'HookError' } });
    for (const e of [maxTurns, plainError, busy, hookError]) expect(RunFailedSchema.parse(e)).toEqual(e);
  });

  it("RunFailedError carries the run_failed event's stopReason", async () => {
    const error = await start(agentOf([{ error: new Error('boom') }]), 'q', { retry: false }).result.catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(RunFailedError);
    expect(error).toMatchObject({ stopReason: 'internal_error' });
  });

  it('a terminal event without its stopReason, or with one that does not belong to its type, is rejected by the schemas', () => {
    const base = {
      runId: 'r',
      seq: 1,
      turn: 1,
      at: 0,
      undelivered: [],
      usage: { inputTokens: 0, outputTokens: 0, totalTokens: 0, reported: true },
    };
    const completed = { type: 'run_completed', ...base, output: '', finishReason: 'stop' };
    expect(RunCompletedSchema.safeParse(completed).success).toBe(false);
    expect(RunCompletedSchema.safeParse({ ...completed, stopReason: 'completed' }).success).toBe(true);
    expect(RunCompletedSchema.safeParse({ ...completed, stopReason: 'cancelled' }).success).toBe(false);
    const cancelled = { type: 'run_cancelled', ...base, reason: 'x', phase: 'turn_entry', partial: [] };
    expect(RunCancelledSchema.safeParse(cancelled).success).toBe(false);
    expect(RunCancelledSchema.safeParse({ ...cancelled, stopReason: 'cancelled' }).success).toBe(true);
    expect(RunCancelledSchema.safeParse({ ...cancelled, stopReason: 'completed' }).success).toBe(false);
    const failed = { type: 'run_failed', ...base, error: { name: 'E', message: 'm' }, partial: [] };
    expect(RunFailedSchema.safeParse({ ...failed, stopReason: 'session_error' }).success).toBe(true);
    expect(RunFailedSchema.safeParse({ ...failed, stopReason: 'completed' }).success).toBe(false);
    expect(RunFailedSchema.safeParse({ ...failed, stopReason: 'cancelled' }).success).toBe(false);
  });
});
