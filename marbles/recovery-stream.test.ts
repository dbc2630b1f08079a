/**
 * Checkpoint 3: model stream (each event raced against cancel and the
 * deadlines), with the real engine in virtual time. Inside `run()` the async
 * and asap schedulers are virtual, so no scheduler is injected.
 */
import { tap } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { beforeEach, describe, expect, it } from 'vitest';
import { CancelSignal } from '../src/cancel/index.js';
import { defineAgent } from '../src/engine/define-agent.js';
import { run } from '../src/engine/run.js';
import { eventLabels, scriptedModel, sequentialIds } from '../src/testing/index.js';
import type { ModelEvent } from '../src/model/types.js';

let ts: TestScheduler;
beforeEach(() => {
  ts = new TestScheduler((actual, expected) => expect(actual).toEqual(expected));
});

const L = {
  s: 'run_started', t: 'turn_started', q: 'model_request_started', d: 'text_delta', r: 'model_response_completed',
  u: 'turn_completed', C: 'run_completed', x: 'run_cancelled:model_stream', D: 'run_cancelled:dispatch',
};
const E: Record<string, ModelEvent> = {
  a: { type: 'text_delta', delta: 'a' }, b: { type: 'text_delta', delta: 'b' },
  c: { type: 'text_delta', delta: 'c' }, d: { type: 'text_delta', delta: 'd' },
  r: { type: 'response', response: { text: 'abcd', toolCalls: [], finishReason: 'stop' } },
};
/** Deltas at frames 5, 10, 15, 20; the response and completion at 25. */
const STREAM = '5ms a 4ms b 4ms c 4ms d 4ms (r|)';

/** Schedules `work` at `frame`, after every action already scheduled for that frame. */
function late(work: () => void, frame: number): void {
  ts.schedule(() => ts.schedule(work, frame - 1), 1);
}

function setup(cold: (m: string, v?: Record<string, ModelEvent>) => any) {
  const stream = cold(STREAM, E);
  const read: string[] = [];
  const model = scriptedModel([{ events: () => stream.pipe(tap((e: ModelEvent) => read.push(e.type === 'text_delta' ? e.delta : e.type))) }]);
  const agent = defineAgent({ name: 'a', instructions: '', model });
  const cancel = new CancelSignal();
  const events$ = run(agent, 'hi', { cancel, idGenerator: sequentialIds() }).pipe(eventLabels());
  return { stream, read, model, cancel, events$ };
}

describe('row 3: streaming, each event raced against the cancel', () => {
  it('without a cancel the stream is read to the end', () => {
    ts.run(({ cold, expectObservable, expectSubscriptions }) => {
      const { stream, events$ } = setup(cold);
      expectObservable(events$).toBe('(stq) d 4ms d 4ms d 4ms d 4ms (ruC|)', L);
      expectSubscriptions(stream.subscriptions).toBe('^ 24ms !');
    });
  });

  it('cancel mid-stream: no further event is read and the provider call is torn down at the cancel frame', () => {
    ts.run(({ cold, expectObservable, expectSubscriptions, flush }) => {
      const { stream, read, model, cancel, events$ } = setup(cold);
      ts.schedule(() => cancel.cancel('stop'), 12);
      expectObservable(events$).toBe('(stq) d 4ms d 1ms (x|)', L);
      expectSubscriptions(stream.subscriptions).toBe('^ 11ms !');
      flush();
      expect(read).toEqual(['a', 'b']);
      expect(model.calls.map((c) => c.tornDown)).toEqual([true]);
      expect(ts.actions).toEqual([]);
    });
  });

  it('tie, cancel scheduled before the response in its frame: the response is never read', () => {
    ts.run(({ cold, expectObservable, expectSubscriptions, flush }) => {
      const { stream, read, model, cancel, events$ } = setup(cold);
      ts.schedule(() => cancel.cancel('stop'), 25);
      expectObservable(events$).toBe('(stq) d 4ms d 4ms d 4ms d 4ms (x|)', L);
      expectSubscriptions(stream.subscriptions).toBe('^ 24ms !');
      flush();
      expect(read).toEqual(['a', 'b', 'c', 'd']);
      expect(model.calls[0]!.tornDown).toBe(true);
    });
  });

  it('tie, cancel scheduled after the response in its frame: the cancel still wins at the next stage', () => {
    ts.run(({ cold, expectObservable, flush }) => {
      const { read, model, cancel, events$ } = setup(cold);
      late(() => cancel.cancel('stop'), 25);
      expectObservable(events$).toBe('(stq) d 4ms d 4ms d 4ms d 4ms (ruD|)', L);
      flush();
      expect(read).toEqual(['a', 'b', 'c', 'd', 'response']);
      expect(model.calls.length).toBe(1);
    });
  });

  it('a cancel raised synchronously in the handler of a text_delta: the next event is never read', () => {
    ts.run(({ cold, expectSubscriptions, flush }) => {
      const { stream, read, cancel, events$ } = setup(cold);
      const seen: string[] = [];
      events$.subscribe((label) => {
        seen.push(label);
        if (label === 'text_delta') cancel.cancel('stop');
      });
      expectSubscriptions(stream.subscriptions).toBe('^ 4ms !');
      flush();
      expect(read).toEqual(['a']);
      expect(seen).toEqual(['run_started', 'turn_started', 'model_request_started', 'text_delta', 'run_cancelled:model_stream']);
    });
  });
});
