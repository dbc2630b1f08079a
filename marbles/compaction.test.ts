import { tap, type Observable } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { beforeEach, describe, expect, it } from 'vitest';
import {
  CancelSignal,
  MemorySession,
  defineAgent,
  run,
  type Item,
  type RunCancelled,
  type RunEvent,
} from '../src/index.js';
import type { ModelEvent } from '../src/model/types.js';
import { scriptedModel, sequentialIds } from '../src/testing/index.js';

/**
 * Compaction at its checkpoint (`compaction`, docs/cancellation.md): the stored history is far over the agent's
 * 100-token window, so the run compacts before its first request. The summary call is `---(r|)` (subscribed at
 * frame 0). A cancel while it is pending, or in the frame the summary arrives (in either order), lands at
 * `compaction`: the call is unsubscribed, no summary Item is added (not in `partial`), nothing is sent to the
 * agent's model, and the session's history is byte-identical.
 */
let ts: TestScheduler;
beforeEach(() => {
  ts = new TestScheduler((actual, expected) => expect(actual).toEqual(expected));
});

const history: Item[] = [1, 2, 3].flatMap((n): Item[] => [
  { type: 'user', id: `u${n}`, text: `question ${n} `.repeat(40) },
  { type: 'assistant', id: `a${n}`, text: `answer ${n} `.repeat(40), toolCalls: [] },
]);
const summary = (text: string): ModelEvent => ({
  type: 'response',
  response: { text, toolCalls: [], finishReason: 'stop' },
});

function setup(summary$: () => Observable<ModelEvent>) {
  const cancel = new CancelSignal();
  const session = new MemorySession(history);
  const model = scriptedModel([{ events: summary$ }, { text: 'done', delayMs: 5 }]);
  const agent = defineAgent({ name: 'compacting', instructions: '', model, contextWindow: 100, compaction: {} });
  const events: RunEvent[] = [];
  const log: string[] = [];
  const subscribe = () =>
    run(agent, 'go', { cancel, session, idGenerator: sequentialIds() }).subscribe((e) => {
      events.push(e);
      log.push(`${ts.now()} ${e.type === 'run_cancelled' ? `run_cancelled:${e.phase}` : e.type}`);
    });
  return { cancel, session, model, events, log, subscribe };
}

/** What a cancel during compaction leaves: no summary anywhere, one request (the summary's), the history as it was. */
function expectNothingReplaced(s: ReturnType<typeof setup>): void {
  const end = s.events.at(-1) as RunCancelled;
  expect(end).toMatchObject({ type: 'run_cancelled', phase: 'compaction', reason: 'stop' });
  expect(end.partial).toEqual([{ type: 'user', id: expect.any(String), text: 'go' }]);
  expect(s.events.some((e) => e.type === 'compaction_completed')).toBe(false);
  expect(s.model.requests).toHaveLength(1); // the summary request only
  expect(JSON.stringify(s.session.load())).toBe(JSON.stringify(history));
  expect(s.session.writes).toBe(0);
}

describe('marbles: a cancel during compaction', () => {
  it('lands at compaction: the summary call is unsubscribed, nothing replaced, the history byte-identical', () => {
    ts.run(({ cold, expectSubscriptions }) => {
      const summary$ = cold<ModelEvent>('---(r|)', { r: summary('the summary') });
      const s = setup(() => summary$);
      s.subscribe();
      ts.schedule(() => s.cancel.cancel('stop'), 2);
      ts.flush();
      expectSubscriptions(summary$.subscriptions).toBe('^-!');
      expect(s.log).toEqual([
        '0 run_started',
        '0 turn_started',
        '0 compaction_started',
        '0 model_request_started',
        '2 run_cancelled:compaction',
      ]);
      expectNothingReplaced(s);
      expect(ts.actions).toEqual([]);
    });
  });

  it('tie, cancel scheduled before the summary in that frame: the summary loses, phase compaction', () => {
    ts.run(({ cold, expectSubscriptions }) => {
      const summary$ = cold<ModelEvent>('---(r|)', { r: summary('the summary') });
      const s = setup(() => summary$);
      ts.schedule(() => s.cancel.cancel('stop'), 3); // before the run subscribes: first in frame 3
      s.subscribe();
      ts.flush();
      expectSubscriptions(summary$.subscriptions).toBe('^--!');
      expect(s.log.at(-1)).toBe('3 run_cancelled:compaction');
      expectNothingReplaced(s);
    });
  });

  it('tie, the summary first and the cancel in the same frame: the cancel still wins at the stage, nothing replaced', () => {
    ts.run(({ cold }) => {
      const summary$ = cold<ModelEvent>('---(r|)', { r: summary('the summary') });
      const s = setup(() => summary$.pipe(tap(() => ts.schedule(() => s.cancel.cancel('stop'), 0))));
      s.subscribe();
      ts.flush();
      expect(s.log.at(-1)).toBe('3 run_cancelled:compaction');
      expectNothingReplaced(s);
    });
  });

  it('a summary that arrives first is applied; a later cancel keeps it in partial only, the session unchanged', () => {
    ts.run(({ cold }) => {
      const summary$ = cold<ModelEvent>('---(r|)', { r: summary('the summary') });
      const s = setup(() => summary$);
      s.subscribe();
      ts.schedule(() => s.cancel.cancel('stop'), 4);
      ts.flush();
      expect(s.log).toEqual([
        '0 run_started',
        '0 turn_started',
        '0 compaction_started',
        '0 model_request_started',
        '3 compaction_completed',
        '3 model_request_started',
        '4 run_cancelled:model_request',
      ]);
      const end = s.events.at(-1) as RunCancelled;
      expect(end.partial.map((i) => i.type)).toEqual(['user', 'summary']);
      expect(end.partial[1]).toMatchObject({ type: 'summary', text: 'the summary', covers: ['u1', 'a1', 'u2', 'a2'] });
      // The agent's request went out with the summary in place of the four Items it covers.
      expect(s.model.requests[1]!.items.map((i) => (i.type === 'user' ? i.text.slice(0, 20) : i.type))).toEqual([
        'Summary of the earli',
        history[4]!.type === 'user' ? history[4]!.text.slice(0, 20) : '',
        'assistant',
        'go',
      ]);
      expect(JSON.stringify(s.session.load())).toBe(JSON.stringify(history));
    });
  });
});
