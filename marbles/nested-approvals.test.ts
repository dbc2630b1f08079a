import { from, lastValueFrom, toArray } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { CancelSignal, RunControl, defineAgent, run, tool, type RunEvent } from '../src/index.js';
import { toAgUi } from '../src/ag-ui/index.js';
import { eventLabel, scriptedModel, sequentialIds } from '../src/testing/index.js';

/**
 * A sub-agent's approval decided through the root ("Nested approvals", docs/run-control.md), at virtual time.
 * The root's model asks at frame 1 for `helper` (an agent as tool); the helper's model asks 1 frame later
 * (frame 2) for `gated` (needsApproval; runs 3 frames once approved). A decision ends the nested wait with one
 * stage, as at the root: a root cancel in the same frame wins in both orders, and the nested call never starts.
 */
let ts: TestScheduler;
beforeEach(() => {
  ts = new TestScheduler((actual, expected) => expect(actual).toEqual(expected));
});

function setup() {
  const started: string[] = [];
  const gated = tool({
    name: 'gated',
    description: 'gated',
    parameters: z.object({}),
    needsApproval: true,
    execute: () => {
      started.push('gated');
      return ts.createColdObservable('--x|', { x: 'G' });
    },
  });
  const helperModel = scriptedModel([
    { toolCalls: [{ name: 'gated', callId: 'g' }], delayMs: 1 },
    { text: 'helped', delayMs: 1 },
  ]);
  const helper = defineAgent({ name: 'helper', instructions: '', model: helperModel, tools: [gated] });
  const rootModel = scriptedModel([
    { toolCalls: [{ name: 'helper', callId: 'h', arguments: { input: 'do it' } }], delayMs: 1 },
    { text: 'done', delayMs: 1 },
  ]);
  const lead = defineAgent({
    name: 'lead',
    instructions: '',
    model: rootModel,
    tools: [helper.asTool({ name: 'helper', description: 'helps' })],
  });
  const cancel = new CancelSignal();
  const control = new RunControl();
  const log: string[] = [];
  const events: RunEvent[] = [];
  run(lead, 'go', { cancel, control, scheduler: ts, idGenerator: sequentialIds() }).subscribe((e) => {
    events.push(e);
    const inner = e.type === 'subrun_event' ? ` ${e.path.join('/')}:${eventLabel(e.event)}` : '';
    log.push(`${ts.now()} ${eventLabel(e)}${inner}`);
  });
  return { cancel, control, log, events, started };
}

const nested = (s: ReturnType<typeof setup>, type: string) =>
  s.events.filter((e) => e.type === 'subrun_event' && e.event.type === type);

describe('marbles: a nested approval vs a root stop', () => {
  it('approved through the root control: the nested call runs, the helper and the root complete', () => {
    ts.run(() => {
      const s = setup();
      let answered: boolean | undefined;
      ts.schedule(() => void (answered = s.control.approve('g')), 5);
      ts.flush();
      expect(answered).toBe(true);
      expect(s.started).toEqual(['gated']);
      expect(s.log.filter((l) => l.includes('helper:tool_'))).toEqual([
        '2 subrun_event helper:tool_approval_requested',
        '5 subrun_event helper:tool_call_started:gated',
        '8 subrun_event helper:tool_call_completed:gated',
      ]);
      expect(s.log.at(-1)).toBe('10 run_completed');
    });
  });

  it('tie: approve then a root cancel in the same frame: the cancel wins, the nested call never starts', () => {
    ts.run(() => {
      const s = setup();
      let answered: boolean | undefined;
      ts.schedule(() => void (answered = s.control.approve('g')), 5);
      ts.schedule(() => s.cancel.cancel('Stop'), 5);
      ts.flush();
      expect(answered).toBe(true); // taken; its stage (the hop after it) never starts
      expect(s.started).toEqual([]);
      expect(nested(s, 'tool_call_started')).toEqual([]);
      expect(nested(s, 'tool_call_failed')).toEqual([]);
      expect(s.log.at(-1)).toBe('5 run_cancelled:tool_call');
      expect(ts.actions).toEqual([]);
    });
  });

  it('tie: a root cancel then approve in the same frame: the cancel wins, the decision answers false', () => {
    ts.run(() => {
      const s = setup();
      let answered: boolean | undefined;
      ts.schedule(() => s.cancel.cancel('Stop'), 5);
      ts.schedule(() => void (answered = s.control.approve('g')), 5);
      ts.flush();
      expect(answered).toBe(false);
      expect(s.started).toEqual([]);
      expect(s.log.at(-1)).toBe('5 run_cancelled:tool_call');
      expect(ts.actions).toEqual([]);
    });
  });

  it('over AG-UI the cancelled run settles the nested call it surfaced: not run, with its path', async () => {
    let events: RunEvent[] = [];
    ts.run(() => {
      const s = setup();
      ts.schedule(() => s.cancel.cancel('Stop'), 5);
      ts.flush();
      events = s.events;
    });
    const agui = await lastValueFrom(from(events).pipe(toAgUi({ threadId: 't' }), toArray()));
    const custom = agui.find((e) => e.type === 'CUSTOM' && e.name === 'loopctl.approval_requested');
    expect(custom).toMatchObject({ value: { callId: 'g', name: 'gated', arguments: '{}', path: ['helper'] } });
    const results = agui.filter((e) => e.type === 'TOOL_CALL_RESULT');
    expect(results.map((e) => [e.toolCallId, e.metadata?.['loopctl']])).toEqual([
      ['h', { interrupted: true, run: 'cancelled', ran: true }],
      ['g', { interrupted: true, run: 'cancelled', ran: false, path: ['helper'] }],
    ]);
    expect(agui.at(-1)).toMatchObject({ type: 'RUN_FINISHED', outcome: { type: 'cancelled' } });
  });
});
