import fc from 'fast-check';
import { from, lastValueFrom, toArray } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineAgent, start, tool, type RunEvent } from '../src/index.js';
import { parseEventId, toAgUiFrames, type AgUiFrame, type EventCursor } from '../src/ag-ui/index.js';
import { collectEvents, scriptedModel, sequentialIds, type ScriptedStep } from '../src/testing/index.js';
import { checkAgUiEvent, checkAgUiStream, compactEvents, normalForm } from './support/ag-ui.js';

/**
 * Frames and resuming: every AG-UI event has an id from its RunEvent's seq, and a stream resumed after any
 * frame id continues the first one with no duplicate and no gap — also when the run's text deltas were
 * compacted (replay 'compact') in between.
 */

const frames = (events: readonly RunEvent[], after?: EventCursor) =>
  lastValueFrom(from(events).pipe(toAgUiFrames({ threadId: 't', after }), toArray()));

describe('parseEventId', () => {
  it('reads "<seq>" and "<seq>:<k>", nothing else', () => {
    expect(parseEventId('0')).toEqual({ seq: 0 });
    expect(parseEventId('12')).toEqual({ seq: 12 });
    expect(parseEventId('12:0')).toEqual({ seq: 12, index: 0 });
    for (const bad of ['', '-1', '01', '1.5', '1:', ':1', '1:2:3', 'x', '1e3', ' 1', '99999999999999999']) {
      expect(parseEventId(bad)).toBeUndefined();
    }
  });
});

describe('the AG-UI checks can fail', () => {
  it('a content event with no open message, or a key the schema does not name, is refused', async () => {
    await expect(
      checkAgUiStream([
        { type: 'RUN_STARTED', threadId: 't', runId: 'r' } as never,
        { type: 'TEXT_MESSAGE_CONTENT', messageId: 'm', delta: 'x' } as never,
      ]),
    ).rejects.toThrow(/No active text message/);
    expect(() => checkAgUiEvent({ type: 'RUN_STARTED', threadId: 't', runId: 'r', extra: 1 } as never)).toThrow();
  });
});

const echo = tool({ name: 'echo', description: 'echo', parameters: z.object({}), execute: () => 'echoed' });
const textStep = fc.array(fc.string({ unit: 'grapheme', maxLength: 4 }), { minLength: 1, maxLength: 4 });
const stepArb: fc.Arbitrary<ScriptedStep> = fc.oneof(
  textStep.map((text) => ({ text })),
  fc.tuple(fc.option(textStep, { nil: undefined }), fc.integer({ min: 1, max: 2 })).map(([text, n]) => ({
    ...(text ? { text } : {}),
    toolCalls: Array.from({ length: n }, () => ({ name: 'echo', arguments: {} })),
  })),
);

/** A run of random turns (text, tool calls), cancelled after `cancelAt` events when given. */
async function randomRun(steps: ScriptedStep[], final: string[], cancelAt: number | undefined): Promise<RunEvent[]> {
  const model = scriptedModel([...steps, { text: final }]);
  const agent = defineAgent({ name: 'a', instructions: 'i', model, tools: [echo], maxTurns: 10 });
  const handle = start(agent, 'go', { idGenerator: sequentialIds() });
  if (cancelAt !== undefined) {
    let n = 0;
    handle.events$.subscribe(() => {
      if (++n === cancelAt) handle.cancel({ type: 'stop', at: n });
    });
  }
  return collectEvents(handle.events$);
}

describe('resuming a frame stream after any frame id (property)', () => {
  it('no duplicate, no gap: the same run, live or compacted, resumed after each frame', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(stepArb, { maxLength: 4 }),
        textStep,
        fc.option(fc.integer({ min: 1, max: 30 }), { nil: undefined }),
        async (steps, final, cancelAt) => {
          const events = await randomRun(steps, final, cancelAt);
          const all = await frames(events);
          await checkAgUiStream(all.map((f) => f.event));
          // Ids: strictly increasing positions, each parseable, the last of each group the bare seq.
          const cursors = all.map((f) => parseEventId(f.id)!);
          expect(cursors.every((c) => c !== undefined)).toBe(true);
          expect(new Set(all.map((f) => f.id)).size).toBe(all.length);
          const compacted = compactEvents(events);
          for (let i = -1; i < all.length; i++) {
            const after = i < 0 ? undefined : cursors[i];
            expect(await frames(events, after)).toEqual(all.slice(i + 1));
            const resumed = await frames(compacted, after);
            resumed.forEach((f) => checkAgUiEvent(f.event));
            const seen = all.slice(0, i + 1).map((f: AgUiFrame) => f.event);
            expect(normalForm([...seen, ...resumed.map((f) => f.event)])).toEqual(normalForm(all.map((f) => f.event)));
          }
        },
      ),
      { numRuns: 60 },
    );
  });
});
