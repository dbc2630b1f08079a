import { Observable } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { beforeEach, describe, expect, it } from 'vitest';
import {
  CancelSignal,
  MemorySession,
  resume,
  start,
  type RunEvent,
  type Session,
  type Suspended,
} from '../src/index.js';
import { eventLabel, sequentialIds } from '../src/testing/index.js';
import { gatedAgent } from './support/gated-agent.js';

/**
 * "Exactly once across resumes" (docs/run-control.md): an approval is consumed when its call starts,
 * against a cancel at the same instant. The suspended batch is `gated` (runs 3 frames once started); the
 * first resume is cancelled at a frame around the record of its start; a second resume of the same
 * suspension follows. `started` counts executions over both resumes: never more than one.
 * `slowStore`: a session whose `recordCallStart` writes at once but answers 3 frames later (a durable
 * store's round trip); the memory session answers in the same step.
 */
let ts: TestScheduler;
beforeEach(() => {
  ts = new TestScheduler((actual, expected) => expect(actual).toEqual(expected));
});

/**
 * `tie`, when set, is called once with where the store is: 'before' (its answer not yet scheduled) and
 * 'after' (scheduled), so a spec queues a cancel in the answer's frame before or after the answer.
 */
function slowStore(inner: MemorySession, tie: { at?: 'before' | 'after'; fire?: () => void }): Session {
  return {
    load: () => inner.load(),
    append: (items, options) => inner.append(items, options),
    recordCallStart: (suspensionId, callId) => {
      const first = inner.recordCallStart(suspensionId, callId); // the write lands now
      const answer = ts.createColdObservable('---(a|)', { a: first }); // its answer 3 frames later
      const fire = tie.fire;
      tie.fire = undefined;
      if (fire && tie.at === 'before') ts.schedule(fire, 3);
      return new Observable<boolean>((subscriber) => {
        const inner$ = answer.subscribe(subscriber);
        if (fire && tie.at === 'after') ts.schedule(fire, 3);
        return inner$;
      });
    },
  };
}

/**
 * Suspends, then resumes once with `cancelAt` (frames after the resume starts; `queuedFirst`: the cancel
 * is queued before the resume, so in the record's answer frame it comes first), then resumes again.
 */
function scenario(options: { slow: boolean; cancelAt: number; queuedFirst: boolean; tie?: 'before' | 'after' }) {
  const { agent, started } = gatedAgent(ts);
  const memory = new MemorySession();
  const tie: { at?: 'before' | 'after'; fire?: () => void } = options.tie ? { at: options.tie } : {};
  const session = options.slow ? slowStore(memory, tie) : memory;
  const common = { session, scheduler: ts, idGenerator: sequentialIds() };
  let suspended: Suspended | undefined;
  start(agent, 'go', { ...common, approvals: 'suspend' }).events$.subscribe((e: RunEvent) => {
    if (e.type === 'run_completed') suspended = e.suspended;
  });
  ts.flush();
  const t0 = ts.now();
  const first: string[] = [];
  const cancel = new CancelSignal();
  const fire = (): void => void cancel.cancel('the operator pressed Stop');
  if (options.tie) tie.fire = fire;
  else if (options.queuedFirst) ts.schedule(fire, options.cancelAt);
  resume(agent, suspended!, { g: { approve: true } }, { ...common, cancel }).events$.subscribe((e: RunEvent) =>
    first.push(`${ts.now() - t0} ${eventLabel(e)}`),
  );
  ts.flush();
  const afterFirst = [...started];
  const t1 = ts.now();
  const second: string[] = [];
  const failures: string[] = [];
  resume(agent, suspended!, { g: { approve: true } }, common).events$.subscribe((e: RunEvent) => {
    second.push(`${ts.now() - t1} ${eventLabel(e)}`);
    if (e.type === 'tool_call_failed') failures.push(e.error.name);
  });
  ts.flush();
  return { first, second, afterFirst, started, failures };
}

describe('marbles: an approval consumed vs a cancel at the same instant', () => {
  for (const tie of ['before', 'after'] as const) {
    const order = tie === 'before' ? 'the cancel first' : "the store's answer first";
    it(`a store answering in the cancel's frame (${order}): the cancel wins, the call never starts and is not run again`, () => {
      ts.run(() => {
        const s = scenario({ slow: true, cancelAt: 3, queuedFirst: false, tie });
        expect(s.first).toEqual(['0 run_started', '3 run_cancelled:tool_call']);
        expect(s.afterFirst).toEqual([]);
        // Recorded though it never ran: at most once. The model reads that its effects are unknown.
        expect(s.second).toContain('3 tool_call_failed:gated'); // the second record's answer, refused
        expect(s.failures).toEqual(['ToolCallAlreadyStartedError']);
        expect(s.second.at(-1)).toMatch(/run_completed/);
        expect(s.started).toEqual([]);
      });
    });
  }

  it('a store answering a frame before the cancel: the call starts at its answer, and runs once over both resumes', () => {
    ts.run(() => {
      const s = scenario({ slow: true, cancelAt: 4, queuedFirst: true });
      expect(s.first).toEqual(['0 run_started', '3 tool_call_started:gated', '4 run_cancelled:tool_call']);
      expect(s.afterFirst).toEqual(['gated']);
      expect(s.failures).toEqual(['ToolCallAlreadyStartedError']);
      expect(s.started).toEqual(['gated']);
    });
  });

  it("memory session, a cancel in the resume's first frame (before its call's start stage): nothing recorded; the second resume runs it once", () => {
    ts.run(() => {
      const s = scenario({ slow: false, cancelAt: 0, queuedFirst: true });
      expect(s.first).toEqual(['0 run_started', '0 run_cancelled:session_load']);
      expect(s.afterFirst).toEqual([]);
      expect(s.failures).toEqual([]);
      expect(s.second).toContain('0 tool_call_started:gated');
      expect(s.started).toEqual(['gated']);
    });
  });

  it('memory session, a cancel a frame after the start: recorded and started in one step; never run again', () => {
    ts.run(() => {
      const s = scenario({ slow: false, cancelAt: 1, queuedFirst: true });
      expect(s.first).toEqual(['0 run_started', '0 tool_call_started:gated', '1 run_cancelled:tool_call']);
      expect(s.failures).toEqual(['ToolCallAlreadyStartedError']);
      expect(s.started).toEqual(['gated']);
    });
  });
});
