import type { AGUIEvent } from '@ag-ui/core';
import { from, lastValueFrom, toArray } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  CancelSignal,
  MemorySession,
  ModelCallError,
  RunControl,
  defineAgent,
  run,
  start,
  tool,
  type RunEvent,
  type RunOptions,
} from '../src/index.js';
import { LOOPCTL_EVENTS, assistantMessageId, toAgUi, toolResultMessageId } from '../src/ag-ui/index.js';
import { collectEvents, scriptedModel, sequentialIds, type ScriptedStep } from '../src/testing/index.js';
import { checkAgUiStream } from './support/ag-ui.js';

/** loopctl/ag-ui: the mapping table of docs/ui.md, event by event; every event valid by @ag-ui/core's schemas. */

const mapAll = (events: readonly RunEvent[], threadId = 'th') =>
  lastValueFrom(from(events).pipe(toAgUi({ threadId }), toArray()));

async function runAndMap(steps: (ScriptedStep | string)[], options: RunOptions = {}, tools = [] as never[]) {
  const model = scriptedModel(steps);
  const agent = defineAgent({ name: 'a', instructions: 'i', model, tools });
  const events = await collectEvents(run(agent, 'hi', { idGenerator: sequentialIds(), random: () => 0, ...options }));
  const agui = await mapAll(events);
  await checkAgUiStream(agui);
  return { events, agui };
}

/** A compact view: type, plus the field that tells events of a type apart. */
const label = (e: AGUIEvent): string => {
  switch (e.type) {
    case 'TEXT_MESSAGE_CONTENT':
      return `CONTENT ${e.messageId} ${JSON.stringify(e.delta)}`;
    case 'TEXT_MESSAGE_START':
    case 'TEXT_MESSAGE_END':
      return `${e.type} ${e.messageId}`;
    case 'STEP_STARTED':
    case 'STEP_FINISHED':
      return `${e.type} ${e.stepName}`;
    case 'TOOL_CALL_START':
      return `TOOL_CALL_START ${e.toolCallId} ${e.toolCallName} parent=${e.parentMessageId}`;
    case 'TOOL_CALL_ARGS':
      return `TOOL_CALL_ARGS ${e.toolCallId} ${e.delta}`;
    case 'TOOL_CALL_END':
      return `TOOL_CALL_END ${e.toolCallId}`;
    case 'TOOL_CALL_RESULT':
      return `TOOL_CALL_RESULT ${e.toolCallId} ${JSON.stringify(e.content)}`;
    case 'CUSTOM':
      return `CUSTOM ${e.name}`;
    default:
      return e.type;
  }
};
const m = (seq: number) => assistantMessageId('run-1', seq);

describe('toAgUi: the mapping of each RunEvent', () => {
  it('a streamed answer: RUN_STARTED, a step per turn, one text message, RUN_FINISHED with the result', async () => {
    const { agui } = await runAndMap([{ text: ['Hel', '', 'lo'] }]);
    expect(agui.map(label)).toEqual([
      'RUN_STARTED',
      'STEP_STARTED turn 1',
      `TEXT_MESSAGE_START ${m(2)}`,
      `CONTENT ${m(2)} "Hel"`,
      `CONTENT ${m(2)} "lo"`,
      `TEXT_MESSAGE_END ${m(2)}`,
      'STEP_FINISHED turn 1',
      'RUN_FINISHED',
    ]);
    expect(agui[0]).toMatchObject({ threadId: 'th', runId: 'run-1' });
    expect(agui.at(-1)).toEqual({
      type: 'RUN_FINISHED',
      timestamp: expect.any(Number),
      threadId: 'th',
      runId: 'run-1',
      result: { output: 'Hello', finishReason: 'stop', undelivered: [] },
      outcome: { type: 'success' },
      usage: [{ inputTokens: 10, outputTokens: 5, totalTokens: 15 }],
    });
  });

  it('a compaction: CUSTOM loopctl.compaction_started / _completed; the summary is not streamed as a message', async () => {
    const model = scriptedModel(['the earlier talk, summarised', 'Hello']);
    const history = [
      { type: 'user', id: 'u1', text: 'q '.repeat(200) },
      { type: 'assistant', id: 'a1', text: 'a '.repeat(200), toolCalls: [] },
    ] as const;
    const session = new MemorySession([...history]);
    const agent = defineAgent({
      name: 'a',
      instructions: 'i',
      model,
      contextWindow: 100,
      compaction: { keepRecentTurns: 1 },
    });
    const events = await collectEvents(run(agent, 'hi', { session, idGenerator: sequentialIds() }));
    const agui = await mapAll(events);
    await checkAgUiStream(agui);
    const custom = agui.filter((e) => e.type === 'CUSTOM');
    expect(custom).toEqual([
      expect.objectContaining({
        name: LOOPCTL_EVENTS.compactionStarted,
        value: {
          cause: 'threshold',
          strategy: 'summary',
          tokensBefore: expect.any(Number),
          contextWindow: 100,
          items: 2,
        },
      }),
      expect.objectContaining({
        name: LOOPCTL_EVENTS.compactionCompleted,
        value: expect.objectContaining({
          strategy: 'summary',
          items: 2,
          usage: { inputTokens: 10, outputTokens: 5, totalTokens: 15 },
        }),
      }),
    ]);
    const content = agui.filter((e) => e.type === 'TEXT_MESSAGE_CONTENT');
    expect(content.map((e) => (e as { delta: string }).delta)).toEqual(['Hello']);
  });

  it('a graceful stop: CUSTOM loopctl.stop_requested { at, graceMs }, then RUN_FINISHED with result.stopReason', async () => {
    const echo = tool({ name: 'echo', description: 'echo', parameters: z.object({}), execute: () => 'ok' });
    const control = new RunControl();
    const model = scriptedModel([{ text: 'Step.', toolCalls: [{ name: 'echo', callId: 'c1' }] }, 'never']);
    const agent = defineAgent({ name: 'a', instructions: 'i', model, tools: [echo] });
    const events: RunEvent[] = [];
    await new Promise<void>((resolve) =>
      run(agent, 'hi', { control, idGenerator: sequentialIds() }).subscribe({
        next: (e) => {
          events.push(e);
          if (e.type === 'turn_started') control.stop({ at: 'turn_end', graceMs: 60_000 });
        },
        complete: resolve,
      }),
    );
    const agui = await mapAll(events);
    await checkAgUiStream(agui);
    const stop = agui.find((e) => e.type === 'CUSTOM');
    expect(stop).toMatchObject({ name: LOOPCTL_EVENTS.stopRequested, value: { at: 'turn_end', graceMs: 60_000 } });
    expect(agui.at(-1)).toMatchObject({
      type: 'RUN_FINISHED',
      outcome: { type: 'success' },
      result: { output: 'Step.', finishReason: 'tool_calls', undelivered: [], stopReason: 'stopped' },
    });
  });

  it('a structured answer: CUSTOM loopctl.output_delta after each content, value in RUN_FINISHED.result', async () => {
    const model = scriptedModel([{ text: ['{"n": 4', '2, "s": "a', '"}'] }]);
    const agent = defineAgent({
      name: 'a',
      instructions: 'i',
      model,
      output: z.object({ n: z.number(), s: z.string() }),
    });
    const events = await collectEvents(run(agent, 'hi', { idGenerator: sequentialIds(), random: () => 0 }));
    const agui = await mapAll(events);
    await checkAgUiStream(agui);
    expect(agui.map(label)).toEqual([
      'RUN_STARTED',
      'STEP_STARTED turn 1',
      `TEXT_MESSAGE_START ${m(2)}`,
      `CONTENT ${m(2)} "{\\"n\\": 4"`,
      `CUSTOM ${LOOPCTL_EVENTS.outputDelta}`,
      `CONTENT ${m(2)} "2, \\"s\\": \\"a"`,
      `CUSTOM ${LOOPCTL_EVENTS.outputDelta}`,
      `CONTENT ${m(2)} "\\"}"`,
      `CUSTOM ${LOOPCTL_EVENTS.outputDelta}`,
      `TEXT_MESSAGE_END ${m(2)}`,
      'STEP_FINISHED turn 1',
      'RUN_FINISHED',
    ]);
    const values = agui.flatMap((e) => (e.type === 'CUSTOM' ? [e.value] : []));
    expect(values).toEqual([
      { messageId: m(2), value: { n: 4 } },
      { messageId: m(2), value: { n: 42, s: 'a' } },
      { messageId: m(2), value: { n: 42, s: 'a' } },
    ]);
    expect(agui.at(-1)).toMatchObject({
      type: 'RUN_FINISHED',
      result: { output: '{"n": 42, "s": "a"}', value: { n: 42, s: 'a' }, finishReason: 'stop', undelivered: [] },
    });
  });

  it("a tool turn: TOOL_CALL_START/ARGS/END under the response's message, then TOOL_CALL_RESULT", async () => {
    const echo = tool({
      name: 'echo',
      description: 'echo',
      parameters: z.object({ x: z.string() }),
      execute: ({ x }) => `got ${x}`,
    });
    const { agui } = await runAndMap(
      [{ text: 'Checking.', toolCalls: [{ name: 'echo', arguments: { x: 'a' }, callId: 'c1' }] }, 'Done.'],
      {},
      [echo] as never[],
    );
    expect(agui.map(label)).toEqual([
      'RUN_STARTED',
      'STEP_STARTED turn 1',
      `TEXT_MESSAGE_START ${m(2)}`,
      `CONTENT ${m(2)} "Checking."`,
      `TEXT_MESSAGE_END ${m(2)}`,
      `TOOL_CALL_START c1 echo parent=${m(2)}`,
      'TOOL_CALL_ARGS c1 {"x":"a"}',
      'TOOL_CALL_END c1',
      'TOOL_CALL_RESULT c1 "got a"',
      'STEP_FINISHED turn 1',
      'STEP_STARTED turn 2',
      `TEXT_MESSAGE_START ${m(9)}`,
      `CONTENT ${m(9)} "Done."`,
      `TEXT_MESSAGE_END ${m(9)}`,
      'STEP_FINISHED turn 2',
      'RUN_FINISHED',
    ]);
    expect(agui.find((e) => e.type === 'TOOL_CALL_RESULT')).toMatchObject({
      messageId: toolResultMessageId('run-1', 'c1'),
      role: 'tool',
    });
  });

  it('a denied call gets START/END and an error result carrying the error in metadata', async () => {
    const echo = tool({ name: 'echo', description: 'echo', parameters: z.object({}), execute: () => 'ran' });
    const { agui } = await runAndMap(
      [{ toolCalls: [{ name: 'echo', arguments: {}, callId: 'c1' }] }, 'ok'],
      { hooks: { beforeToolCall: () => ({ deny: 'not today' }) } },
      [echo] as never[],
    );
    const calls = agui.filter((e) => e.type.startsWith('TOOL_CALL'));
    expect(calls.map(label)).toEqual([
      `TOOL_CALL_START c1 echo parent=${m(2)}`,
      'TOOL_CALL_END c1',
      expect.stringMatching(/^TOOL_CALL_RESULT c1 ".*not today.*"$/),
    ]);
    expect(calls[2]).toMatchObject({
      metadata: { loopctl: { error: { name: expect.any(String) }, interrupted: false } },
    });
  });

  it('an answer that starts over (rescue): END, then loopctl.answer_restarted, then a new message id', async () => {
    const { agui } = await runAndMap([
      { text: ['par', 'tial'], error: new ModelCallError('reset', { retryable: true }) },
      'full',
    ]);
    expect(agui.map(label)).toEqual([
      'RUN_STARTED',
      'STEP_STARTED turn 1',
      `TEXT_MESSAGE_START ${m(2)}`,
      `CONTENT ${m(2)} "par"`,
      `CONTENT ${m(2)} "tial"`,
      `TEXT_MESSAGE_END ${m(2)}`,
      `CUSTOM ${LOOPCTL_EVENTS.answerRestarted}`,
      `TEXT_MESSAGE_START ${m(5)}`,
      `CONTENT ${m(5)} "full"`,
      `TEXT_MESSAGE_END ${m(5)}`,
      'STEP_FINISHED turn 1',
      'RUN_FINISHED',
    ]);
    expect(agui[6]).toMatchObject({ value: { previousMessageId: m(2), cause: 'rescue' } });
  });

  it('a retry after streamed text: retry_scheduled, and the restart says cause "retry"', async () => {
    const transient = () => new ModelCallError('busy', { retryable: true, status: 503 });
    const { events, agui } = await runAndMap(
      [
        { text: ['a'], error: transient() }, // streamed, then broken: rescued (attempt 2, not streamed)
        { error: transient() }, // the rescue fails: a retry (attempt 3)
        { text: ['c'], error: transient() }, // streamed, broken again: the rescue was used, so a retry (attempt 4)
        'd',
      ],
      { retry: { initialDelayMs: 1, maxDelayMs: 1 } },
    );
    expect(events.filter((e) => e.type === 'retry_scheduled')).toHaveLength(2);
    const restarts = agui.filter((e) => e.type === 'CUSTOM' && e.name === LOOPCTL_EVENTS.answerRestarted);
    // Attempt 3 follows the rescue, which streamed nothing: no message to drop, no restart event.
    expect(restarts.map((e) => (e as { value: unknown }).value)).toEqual([
      { previousMessageId: m(2), cause: 'rescue' },
      { previousMessageId: m(6), cause: 'retry' },
    ]);
    const retry = agui.find((e) => e.type === 'CUSTOM' && e.name === LOOPCTL_EVENTS.retryScheduled);
    expect(retry).toMatchObject({
      value: { attempt: 3, delayMs: 0, error: { name: 'ModelCallError', message: 'busy' } },
    });
    expect(agui.filter((e) => e.type === 'TEXT_MESSAGE_START').map(label)).toEqual(
      [2, 6, 9].map((seq) => `TEXT_MESSAGE_START ${m(seq)}`),
    );
  });

  it('a restart after fallback_activated says cause "fallback" (the mapper alone, on hand-made events)', async () => {
    const b = { runId: 'run-1', turn: 1, at: 5 };
    const agui = await mapAll([
      { type: 'run_started', ...b, turn: 0, seq: 0, agent: 'a' },
      { type: 'turn_started', ...b, seq: 1 },
      { type: 'model_request_started', ...b, seq: 2, model: 'p', attempt: 1, stream: true },
      { type: 'text_delta', ...b, seq: 3, delta: 'x' },
      { type: 'fallback_activated', ...b, seq: 4, from: 'p', to: 'f', reason: 'circuit_open' },
      { type: 'model_request_started', ...b, seq: 5, model: 'f', attempt: 2, stream: true },
    ]);
    expect(agui.slice(3).map(label)).toEqual([
      `CONTENT ${m(2)} "x"`,
      `CUSTOM ${LOOPCTL_EVENTS.fallbackActivated}`,
      `TEXT_MESSAGE_END ${m(2)}`,
      `CUSTOM ${LOOPCTL_EVENTS.answerRestarted}`,
    ]);
    expect(agui[4]).toMatchObject({ timestamp: 5, value: { from: 'p', to: 'f', reason: 'circuit_open' } });
    expect(agui[6]).toMatchObject({ value: { previousMessageId: m(2), cause: 'fallback' } });
  });

  it('a cancelled run: message and step close, loopctl.cancelled (reason described), RUN_FINISHED', async () => {
    const cancel = new CancelSignal();
    const reason = new Proxy(
      {},
      {
        get: () => {
          throw new Error('hostile');
        },
        ownKeys: () => {
          throw new Error('hostile');
        },
      },
    );
    const model = scriptedModel([{ text: ['Hel'], hold: new Promise(() => {}) }]);
    const agent = defineAgent({ name: 'a', instructions: 'i', model });
    const handle = start(agent, 'hi', { idGenerator: sequentialIds(), cancel });
    await new Promise((r) => setTimeout(r, 0));
    handle.cancel(reason);
    const agui = await mapAll(await collectEvents(handle.events$));
    await checkAgUiStream(agui);
    expect(agui.map(label)).toEqual([
      'RUN_STARTED',
      'STEP_STARTED turn 1',
      `TEXT_MESSAGE_START ${m(2)}`,
      `CONTENT ${m(2)} "Hel"`,
      `TEXT_MESSAGE_END ${m(2)}`,
      'STEP_FINISHED turn 1',
      `CUSTOM ${LOOPCTL_EVENTS.cancelled}`,
      'RUN_FINISHED',
    ]);
    expect(agui[6]).toMatchObject({ value: { phase: 'model_stream', reason: expect.any(String), undelivered: [] } });
    expect(agui[7]).toMatchObject({ outcome: { type: 'cancelled' }, threadId: 'th', runId: 'run-1' });
  });

  it('a failed run ends RUN_ERROR (code: the stop reason); steering shows as loopctl.steering_injected', async () => {
    const model = scriptedModel([{ toolCalls: [{ name: 'missing', arguments: {} }] }, 'x', 'y']);
    const agent = defineAgent({ name: 'a', instructions: 'i', model, maxTurns: 1 });
    const handle = start(agent, 'hi', { idGenerator: sequentialIds() });
    handle.mailbox.push('and also');
    const agui = await mapAll(await collectEvents(handle.events$));
    await checkAgUiStream(agui);
    expect(agui.filter((e) => e.type === 'CUSTOM')).toMatchObject([
      { name: LOOPCTL_EVENTS.steeringInjected, value: { id: 'item-2', content: 'and also' } },
    ]);
    expect(agui.at(-1)).toMatchObject({
      type: 'RUN_ERROR',
      code: 'max_turns',
      message: expect.stringContaining('maxTurns'),
    });
  });

  it('tool progress of any value becomes JSON data (a BigInt as text, a cycle cut)', async () => {
    const cyclic: Record<string, unknown> = { n: 10n };
    cyclic['self'] = cyclic;
    const slow = tool({
      name: 'slow',
      description: 'reports',
      parameters: z.object({}),
      execute: (_a, ctx) => {
        ctx.reportProgress(cyclic);
        ctx.reportProgress(() => 1);
        return 'ok';
      },
    });
    const { agui } = await runAndMap([{ toolCalls: [{ name: 'slow', arguments: {}, callId: 'c1' }] }, 'ok'], {}, [
      slow,
    ] as never[]);
    const progress = agui.filter((e) => e.type === 'CUSTOM' && e.name === LOOPCTL_EVENTS.toolProgress);
    expect(progress.map((e) => (e as { value: unknown }).value)).toEqual([
      { callId: 'c1', name: 'slow', progress: { n: '10', self: '[Circular]' } },
      { callId: 'c1', name: 'slow', progress: '[function]' },
    ]);
  });
});
