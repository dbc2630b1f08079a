/**
 * Why an answer restarts (the library side): `model_request_started` says why an attempt after
 * the first one started (`cause`: retry, rescue or fallback) and carries the
 * serialised error that caused it, so a UI can say why the answer restarts.
 */
import { describe, expect, it } from 'vitest';
import { defineAgent, ModelCallError, run, type ModelRequestStarted, type RunEvent } from '../src/index.js';
import { collectEvents, scriptedModel } from '../src/testing/index.js';

const starts = (events: RunEvent[]) =>
  events
    .filter((e): e is ModelRequestStarted => e.type === 'model_request_started')
    .map(({ runId, seq, turn, at, ...rest }) => rest);
const transient = (message: string) => new ModelCallError(message, { retryable: true, status: 503 });

describe('model_request_started: cause and error of a restarted answer', () => {
  it('a retry after a transient error: cause retry and its error; the first attempt has neither', async () => {
    const model = scriptedModel([{ error: transient('overloaded') }, 'fine'], { id: 'm' });
    const agent = defineAgent({ name: 'a', instructions: '', model });
    const events = await collectEvents(run(agent, 'hi', { random: () => 0 }));
    expect(starts(events)).toEqual([
      { type: 'model_request_started', model: 'm', attempt: 1, stream: true },
      {
        type: 'model_request_started',
        model: 'm',
        attempt: 2,
        stream: true,
        cause: 'retry',
        error: { name: 'ModelCallError', message: 'overloaded', status: 503, retryable: true },
      },
    ]);
    expect(events.at(-1)).toMatchObject({ type: 'run_completed', output: 'fine' });
  });

  it('a stream broken after its first text is rescued: cause rescue, not streamed, with its error', async () => {
    const broken = new ModelCallError('connection reset', { retryable: true, code: 'ECONNRESET' });
    const model = scriptedModel([{ text: ['half an ans'], error: broken }, 'the whole answer'], { id: 'm' });
    const events = await collectEvents(run(defineAgent({ name: 'a', instructions: '', model }), 'hi'));
    expect(starts(events)).toEqual([
      { type: 'model_request_started', model: 'm', attempt: 1, stream: true },
      {
        type: 'model_request_started',
        model: 'm',
        attempt: 2,
        stream: false,
        cause: 'rescue',
        error: { name: 'ModelCallError', message: 'connection reset', retryable: true, code: 'ECONNRESET' },
      },
    ]);
    expect(events.at(-1)).toMatchObject({ type: 'run_completed', output: 'the whole answer' });
  });

  it('the fallback model takes over once retries are spent: cause fallback, with the last error', async () => {
    const badGateway = new ModelCallError('bad gateway', { retryable: false, status: 502 });
    const primary = scriptedModel([{ error: badGateway }], { id: 'p' });
    const fallback = scriptedModel(['from the fallback'], { id: 'f' });
    const agent = defineAgent({ name: 'a', instructions: '', model: primary, fallbackModel: fallback });
    const events = await collectEvents(run(agent, 'hi'));
    expect(starts(events)).toEqual([
      { type: 'model_request_started', model: 'p', attempt: 1, stream: true },
      {
        type: 'model_request_started',
        model: 'f',
        attempt: 2,
        stream: true,
        cause: 'fallback',
        error: { name: 'ModelCallError', message: 'bad gateway', status: 502, retryable: false },
      },
    ]);
  });
});
