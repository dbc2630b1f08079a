import { TestScheduler } from 'rxjs/testing';
import { beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  CancelSignal,
  defineAgent,
  pendingCalls,
  resume,
  start,
  tool,
  type RunEvent,
  type Suspended,
} from '../src/index.js';
import { eventLabel, scriptedModel, sequentialIds } from '../src/testing/index.js';

/**
 * A sub-agent's approval under a root in suspend mode ("Nested approvals", docs/run-control.md), at virtual
 * time. The root's model asks at frame 1 for `helper` (an agent as tool); the helper's model asks at frame 2
 * for `gated` (needsApproval; runs 3 frames once started). The helper's sub-run suspends after one stage, then
 * the root after its batch: a root cancel in that frame wins in both orders and nothing suspends. A resume
 * continues the helper where it waited; a resume cancelled once the nested call started, then resumed again,
 * never runs it a second time.
 */
let ts: TestScheduler;
beforeEach(() => {
  ts = new TestScheduler((actual, expected) => expect(actual).toEqual(expected));
});

function agents() {
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
    { text: 'helped', delayMs: 1 },
  ]);
  const helper = defineAgent({ name: 'helper', instructions: '', model: helperModel, tools: [gated] });
  const rootModel = scriptedModel([
    { toolCalls: [{ name: 'helper', callId: 'h', arguments: { input: 'do it' } }], delayMs: 1 },
    { text: 'done', delayMs: 1 },
    { text: 'done', delayMs: 1 },
  ]);
  const lead = defineAgent({
    name: 'lead',
    instructions: '',
    model: rootModel,
    tools: [helper.asTool({ name: 'helper', description: 'helps' })],
  });
  return { lead, started };
}

const common = () => ({ scheduler: ts, idGenerator: sequentialIds() });

/** The first run; `onAsked` is called from the handler of the nested `tool_approval_requested`. */
function suspendRun(onAsked?: (cancel: CancelSignal) => void) {
  const a = agents();
  const cancel = new CancelSignal();
  const log: string[] = [];
  let suspended: Suspended | undefined;
  start(a.lead, 'go', { ...common(), cancel, approvals: 'suspend' }).events$.subscribe((e: RunEvent) => {
    const inner = e.type === 'subrun_event' ? ` ${e.path.join('/')}:${eventLabel(e.event)}` : '';
    log.push(`${ts.now()} ${eventLabel(e)}${inner}`);
    if (e.type === 'subrun_event' && e.event.type === 'tool_approval_requested') onAsked?.(cancel);
    if (e.type === 'run_completed') suspended = e.suspended;
  });
  ts.flush();
  return { ...a, log, suspended };
}

describe('marbles: a nested approval under a root in suspend mode', () => {
  it('the helper suspends after one stage, then the root, in the request frame; nothing ran', () => {
    ts.run(() => {
      const r = suspendRun();
      expect(r.log).toEqual([
        '0 run_started',
        '0 turn_started',
        '0 model_request_started',
        '1 model_response_completed',
        '1 tool_call_started:helper',
        '1 subrun_event helper:run_started',
        '1 subrun_event helper:turn_started',
        '1 subrun_event helper:model_request_started',
        '2 subrun_event helper:model_response_completed',
        '2 subrun_event helper:tool_approval_requested',
        '2 subrun_event helper:run_completed',
        '2 run_completed',
      ]);
      expect(pendingCalls(r.suspended!).map((c) => [c.id, c.callId, c.path.join('/')])).toEqual([
        ['h/g', 'g', 'helper'],
      ]);
      expect(r.started).toEqual([]);
    });
  });

  it('tie: a root cancel from the request handler (before the helper suspends): the cancel wins', () => {
    ts.run(() => {
      const r = suspendRun((cancel) => cancel.cancel('stop'));
      expect(r.log.at(-1)).toMatch(/^2 run_cancelled/);
      expect(r.suspended).toBeUndefined();
      expect(r.started).toEqual([]);
    });
  });

  it('tie: a root cancel queued behind the request in its frame: the cancel wins at the stage start', () => {
    ts.run(() => {
      const r = suspendRun((cancel) => void ts.schedule(() => void cancel.cancel('stop'), 0));
      expect(r.log.at(-1)).toMatch(/^2 run_cancelled/);
      expect(r.log.some((l) => l.includes('helper:run_completed'))).toBe(false);
      expect(r.suspended).toBeUndefined();
      expect(r.started).toEqual([]);
    });
  });

  it('resume continues the helper where it waited; cancelled once the call started, a second resume never reruns it', () => {
    ts.run(() => {
      const r = suspendRun();
      const cancel = new CancelSignal();
      const t0 = ts.now();
      const first: string[] = [];
      resume(r.lead, r.suspended!, { 'h/g': { approve: true } }, { ...common(), cancel }).events$.subscribe((e) => {
        const inner = e.type === 'subrun_event' ? ` ${e.path.join('/')}:${eventLabel(e.event)}` : '';
        first.push(`${ts.now() - t0} ${eventLabel(e)}${inner}`);
        // A frame after the nested call started (it runs 3 frames): it is running when the resume is cancelled.
        if (e.type === 'subrun_event' && e.event.type === 'tool_call_started') {
          ts.schedule(() => void cancel.cancel('stop'), 1);
        }
      });
      ts.flush();
      expect(first).toContain('0 subrun_event helper:tool_call_started:gated');
      expect(first.at(-1)).toMatch(/run_cancelled/);
      expect(r.started).toEqual(['gated']);
      const failures: string[] = [];
      let end: RunEvent | undefined;
      resume(r.lead, r.suspended!, { 'h/g': { approve: true } }, common()).events$.subscribe((e) => {
        if (e.type === 'tool_call_failed') failures.push(`${e.callId}:${e.error.name}`);
        end = e;
      });
      ts.flush();
      // The helper's call was started by the first resume: it is not run again (at most once).
      expect(failures).toEqual(['h:ToolCallAlreadyStartedError']);
      expect(end).toMatchObject({ type: 'run_completed', output: 'done' });
      expect(r.started).toEqual(['gated']);
    });
  });
});
