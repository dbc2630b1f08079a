import { TestScheduler } from 'rxjs/testing';
import { beforeEach, describe, expect, it } from 'vitest';
import {
  CancelSignal,
  MemorySession,
  defineAgent,
  run,
  type Item,
  type RequestChanges,
  type RunCancelled,
  type RunEvent,
} from '../src/index.js';
import { scriptedModel, sequentialIds } from '../src/testing/index.js';

/**
 * Request shaping at checkpoint 11 (awaited hook): a cancel while a `prepareRequest` hook is pending abandons it
 * (its Observable unsubscribed at the cancel frame, phase `hook`), nothing is sent, the Items it would have
 * recorded are not in `partial`, and the session's history is byte-identical. A hook that shapes in time has its
 * request sent at the frame it completes. The hook is `---s|` (subscribed at frame 0).
 */
let ts: TestScheduler;
beforeEach(() => {
  ts = new TestScheduler((actual, expected) => expect(actual).toEqual(expected));
});

const history: Item[] = [
  { type: 'user', id: 'h1', text: 'before' },
  { type: 'assistant', id: 'h2', text: 'ok', toolCalls: [] },
];
const NOTE = { type: 'user', id: 'note', text: 'recorded by the hook' } as const;

function setup() {
  const cancel = new CancelSignal();
  const session = new MemorySession(history);
  const model = scriptedModel(['done']);
  const agent = defineAgent({ name: 'shaping', instructions: '', model });
  const events: RunEvent[] = [];
  const log: string[] = [];
  const subscribe = (hook: () => unknown) =>
    run(agent, 'go', {
      cancel,
      session,
      idGenerator: sequentialIds(),
      hooks: { prepareRequest: hook as () => RequestChanges },
    }).subscribe((e) => {
      events.push(e);
      log.push(`${ts.now()} ${e.type === 'run_cancelled' ? `run_cancelled:${e.phase}` : e.type}`);
    });
  return { cancel, session, model, events, log, subscribe };
}

describe('marbles: a cancel during request shaping', () => {
  it('lands at hook: the hook is unsubscribed, nothing is sent or recorded, the history is byte-identical', async () => {
    const before = JSON.stringify(history);
    let s!: ReturnType<typeof setup>;
    ts.run(({ cold, expectSubscriptions }) => {
      const hook$ = cold('---s|', { s: { record: [NOTE], items: [] } });
      s = setup();
      s.subscribe(() => hook$);
      ts.schedule(() => s.cancel.cancel('stop'), 2);
      ts.flush();
      expectSubscriptions(hook$.subscriptions).toBe('^-!');
      expect(s.log.at(-1)).toBe('2 run_cancelled:hook');
    });
    const end = s.events.at(-1) as RunCancelled;
    expect(end.reason).toBe('stop');
    expect(end.partial.map((i) => i.type === 'user' && i.text)).toEqual(['go']);
    expect(s.events.some((e) => e.type === 'user_message_injected')).toBe(false);
    expect(s.model.requests).toHaveLength(0);
    expect(JSON.stringify(await s.session.load())).toBe(before);
  });

  it('tie, cancel scheduled before the hook’s value in that frame: the hook loses, phase hook', () => {
    ts.run(({ cold, expectSubscriptions }) => {
      const hook$ = cold('---s|', { s: { instructions: 'shaped' } });
      const s = setup();
      s.subscribe(() => hook$);
      ts.schedule(() => s.cancel.cancel('stop'), 3);
      ts.flush();
      expectSubscriptions(hook$.subscriptions).toBe('^--!');
      expect(s.log.at(-1)).toBe('3 run_cancelled:hook');
      expect(s.model.requests).toHaveLength(0);
    });
  });

  it('a hook that completes first has its shaped request sent in that frame', () => {
    ts.run(({ cold }) => {
      const hook$ = cold('---s|', { s: { instructions: 'shaped', record: [NOTE] } });
      const s = setup();
      s.subscribe(() => hook$);
      ts.flush();
      expect(s.model.requests).toHaveLength(1);
      expect(s.model.requests[0]!.instructions).toBe('shaped');
      expect(s.model.requests[0]!.items.map((i) => i.type === 'user' && i.text)).toEqual([
        'before',
        false,
        'go',
        NOTE.text,
      ]);
      expect(s.log).toContain('4 model_request_started');
      expect(s.log.at(-1)).toBe('4 run_completed');
    });
  });
});
