import { tap, type Observable } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { z } from 'zod';
import { beforeEach, describe, expect, it } from 'vitest';
import {
  CancelSignal,
  Mailbox,
  defineAgent,
  run,
  tool,
  type CancelPhase,
  type Hooks,
  type RunCancelled,
  type RunEvent,
} from '../src/index.js';
import { scriptedModel, sequentialIds } from '../src/testing/index.js';

/**
 * Checkpoint 11: awaited hook: an awaited hook is raced against cancel (phase
 * `hook`, the hook abandoned: its Observable unsubscribed), with the tie in
 * both orders. The model answers at frame 1 with one call to `t`
 * (`-x|`, so 1 → 3); each hook is `--h|` (3 frames).
 */
let ts: TestScheduler;
beforeEach(() => {
  ts = new TestScheduler((actual, expected) => expect(actual).toEqual(expected));
});

type HookName = Exclude<keyof Hooks, 'runEnded'>;

interface Row {
  readonly hook: HookName;
  /** Frame the hook's Observable is subscribed at. */
  readonly at: number;
  /** Phase when the cancel lands just after the hook completed (the next stage's, which never starts). */
  readonly after: CancelPhase;
  /** Model requests sent in either order. */
  readonly requests: number;
  /** Whether `t` ever runs in either order. */
  readonly toolRuns: boolean;
}

const rows: Row[] = [
  { hook: 'turnStarted', at: 0, after: 'model_request', requests: 0, toolRuns: false },
  { hook: 'prepareRequest', at: 0, after: 'model_request', requests: 0, toolRuns: false },
  { hook: 'beforeModelCall', at: 0, after: 'model_request', requests: 0, toolRuns: false },
  { hook: 'beforeToolCall', at: 1, after: 'between_tools', requests: 1, toolRuns: false },
  { hook: 'afterToolCall', at: 3, after: 'turn_entry', requests: 1, toolRuns: true },
];

function setup(row: Row, hook$: Observable<unknown>) {
  const cancel = new CancelSignal();
  let toolSubscribed = 0;
  const t = tool({
    name: 't',
    description: 't',
    parameters: z.object({}),
    execute: () => ts.createColdObservable('-x|', { x: 'T' }).pipe(tap({ subscribe: () => void toolSubscribed++ })),
  });
  const model = scriptedModel([
    { toolCalls: [{ name: 't', callId: 't' }], delayMs: 1 },
    { text: 'done', delayMs: 1 },
  ]);
  const agent = defineAgent({ name: 'hooks', instructions: '', model, tools: [t] });
  const hooks = { [row.hook]: () => hook$ } as Hooks;
  const log: string[] = [];
  const events: RunEvent[] = [];
  run(agent, 'go', { cancel, hooks, idGenerator: sequentialIds() }).subscribe((e) => {
    events.push(e);
    log.push(`${ts.now()} ${e.type === 'run_cancelled' ? `run_cancelled:${e.phase}` : e.type}`);
  });
  return { cancel, model, log, terminal: () => events.at(-1) as RunCancelled, toolRuns: () => toolSubscribed > 0 };
}

/** The hooks' value: `undefined` (a beforeToolCall that returns anything else would be a malformed verdict). */
const ALLOW = { h: undefined };

const marks = (from: number, to: number): string =>
  `${' '.repeat(from)}^${' '.repeat(to - from - 1)}!`.replace(/ /g, '-');

describe('marbles: an awaited hook raced against cancel (row 11)', () => {
  for (const row of rows) {
    describe(row.hook, () => {
      it('a cancel while the hook is pending abandons it (unsubscribed at the cancel frame), phase hook', () => {
        ts.run(({ cold, expectSubscriptions }) => {
          const hook$ = cold('-----h|', ALLOW);
          const s = setup(row, hook$);
          ts.schedule(() => s.cancel.cancel('stop'), row.at + 2);
          ts.flush();
          expect(s.log.at(-1)).toBe(`${row.at + 2} run_cancelled:hook`);
          expectSubscriptions(hook$.subscriptions).toBe(marks(row.at, row.at + 2));
          expect(s.model.requests).toHaveLength(row.requests);
          expect(s.toolRuns()).toBe(row.toolRuns);
          expect(s.terminal().reason).toBe('stop');
        });
      });

      it('tie, cancel scheduled before the hook completes in that frame: the hook loses, phase hook', () => {
        ts.run(({ cold, expectSubscriptions }) => {
          const hook$ = cold('--h|', ALLOW);
          const s = setup(row, hook$);
          ts.schedule(() => s.cancel.cancel('stop'), row.at + 3); // created before the hook's messages
          ts.flush();
          expect(s.log.at(-1)).toBe(`${row.at + 3} run_cancelled:hook`);
          expectSubscriptions(hook$.subscriptions).toBe(marks(row.at, row.at + 3));
          expect(s.model.requests).toHaveLength(row.requests);
          expect(s.toolRuns()).toBe(row.toolRuns);
        });
      });

      it('tie, cancel raised after the hook completed in that frame: the next stage never starts', () => {
        ts.run(({ cold, expectSubscriptions }) => {
          let cancel: CancelSignal | undefined;
          const hook$ = cold('--h|', ALLOW);
          const s = setup(row, hook$.pipe(tap({ complete: () => ts.schedule(() => cancel!.cancel('stop'), 0) })));
          cancel = s.cancel;
          ts.flush();
          expect(s.log.at(-1)).toBe(`${row.at + 3} run_cancelled:${row.after}`);
          expectSubscriptions(hook$.subscriptions).toBe(marks(row.at, row.at + 3));
          expect(s.model.requests).toHaveLength(row.requests);
          expect(s.toolRuns()).toBe(row.toolRuns);
        });
      });
    });
  }

  it('a hook phase ends with the hook: a cancel in the user_message_injected handler after turnStarted is turn_entry', () => {
    ts.run(({ cold }) => {
      const mailbox = new Mailbox();
      mailbox.push('steer');
      const model = scriptedModel(['done']);
      const agent = defineAgent({ name: 'p', instructions: '', model, hooks: { turnStarted: () => cold('-h|') } });
      const cancel = new CancelSignal();
      const phases: string[] = [];
      run(agent, 'go', { cancel, mailbox }).subscribe((e) => {
        if (e.type === 'user_message_injected') cancel.cancel('stop');
        if (e.type === 'run_cancelled') phases.push(e.phase);
      });
      ts.flush();
      expect(phases).toEqual(['turn_entry']);
      expect(model.requests).toHaveLength(0);
    });
  });

  it('afterToolCall: the call result recorded before the hook is kept in partial', () => {
    ts.run(({ cold }) => {
      const s = setup(
        rows.find((r) => r.hook === 'afterToolCall')!,
        cold('-----h|'),
      );
      ts.schedule(() => s.cancel.cancel('stop'), 5);
      ts.flush();
      expect(s.terminal().partial.at(-1)).toEqual({ type: 'tool_result', callId: 't', output: 'T', isError: false });
    });
  });
});
