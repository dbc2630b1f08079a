import { TestScheduler } from 'rxjs/testing';
import { z } from 'zod';
import { beforeEach, describe, expect, it } from 'vitest';
import { CancelSignal, defineAgent, resume, start, tool, type RunEvent, type Suspended } from '../src/index.js';
import { eventLabel, scriptedModel, sequentialIds } from '../src/testing/index.js';

/**
 * A call to a front-end tool (docs/run-control.md, "Front-end tools") against a cancel at the same instant.
 * The model asks at frame 1 for `pick` (a front-end tool) and `free` (the agent's, runs 6 frames) in one
 * parallel batch. The run suspends after one stage, whatever `approvals` is: a cancel in that frame wins in
 * both orders (given from the response's handler, or queued behind it) and nothing of the batch runs; a
 * cancel a frame later finds the run suspended already. The resume answers `pick` with the client's result.
 */
let ts: TestScheduler;
beforeEach(() => {
  ts = new TestScheduler((actual, expected) => expect(actual).toEqual(expected));
});

function setup() {
  const started: string[] = [];
  const free = tool({
    name: 'free',
    description: 'free',
    parameters: z.object({}),
    execute: () => {
      started.push('free');
      return ts.createColdObservable('-----x|', { x: 'F' });
    },
  });
  const model = scriptedModel([
    {
      toolCalls: [
        { name: 'pick', callId: 'p', arguments: { hint: 'warm' } },
        { name: 'free', callId: 'f' },
      ],
      delayMs: 1,
    },
    { text: 'done', delayMs: 1 },
  ]);
  const agent = defineAgent({
    name: 'a',
    instructions: '',
    model,
    tools: [free],
    parallelToolCalls: { maxConcurrency: 2 },
  });
  const frontendTools = [{ name: 'pick', description: 'The user picks a colour.' }];
  const common = { scheduler: ts, idGenerator: sequentialIds(), frontendTools };
  return { agent, model, started, common };
}

/** Runs until it ends; `onResponse` is called from the `model_response_completed` handler. */
function firstRun(onResponse?: (cancel: CancelSignal) => void, cancelAt?: number) {
  const s = setup();
  const cancel = new CancelSignal();
  const log: string[] = [];
  let suspended: Suspended | undefined;
  if (cancelAt !== undefined) ts.schedule(() => void cancel.cancel('stop'), cancelAt);
  start(s.agent, 'go', { ...s.common, cancel }).events$.subscribe((e: RunEvent) => {
    log.push(`${ts.now()} ${eventLabel(e)}`);
    if (e.type === 'model_response_completed') onResponse?.(cancel);
    if (e.type === 'run_completed') suspended = e.suspended;
  });
  ts.flush();
  return { ...s, log, suspended };
}

describe('marbles: a front-end tool call vs a cancel at the same instant', () => {
  it('no cancel: the run suspends in the response frame with the call pending; nothing of the batch runs', () => {
    ts.run(() => {
      const r = firstRun();
      expect(r.log).toEqual([
        '0 run_started',
        '0 turn_started',
        '0 model_request_started',
        '1 model_response_completed',
        '1 run_completed',
      ]);
      expect(r.suspended?.pending.map((c) => c.callId)).toEqual(['p']);
      expect(r.suspended?.frontend).toEqual(['p']);
      expect(r.started).toEqual([]);
    });
  });

  it('a cancel from the response handler (before the suspension stage): the cancel wins', () => {
    ts.run(() => {
      const r = firstRun((cancel) => cancel.cancel('stop'));
      expect(r.log.slice(3)).toEqual(['1 model_response_completed', '1 run_cancelled:dispatch']);
      expect(r.suspended).toBeUndefined();
      expect(r.started).toEqual([]);
    });
  });

  it('a cancel queued behind the response in its frame: the cancel still wins at the stage start', () => {
    ts.run(() => {
      const r = firstRun((cancel) => void ts.schedule(() => void cancel.cancel('stop'), 0));
      expect(r.log.slice(3)).toEqual(['1 model_response_completed', '1 run_cancelled:dispatch']);
      expect(r.suspended).toBeUndefined();
      expect(r.started).toEqual([]);
    });
  });

  it('a cancel a frame later finds the run suspended (it answers nothing); the resume gives the result', () => {
    ts.run(() => {
      const r = firstRun(undefined, 2);
      expect(r.log.at(-1)).toBe('1 run_completed');
      const t0 = ts.now();
      const log: string[] = [];
      const outputs: string[] = [];
      resume(r.agent, r.suspended!, { p: { result: 'amber' } }, r.common).events$.subscribe((e: RunEvent) => {
        log.push(`${ts.now() - t0} ${eventLabel(e)}`);
        if (e.type === 'tool_call_completed') outputs.push(`${e.callId}=${String(e.output)}`);
      });
      ts.flush();
      expect(r.started).toEqual(['free']);
      expect(outputs).toEqual(['p=amber', 'f=F']);
      expect(log.at(-1)).toMatch(/run_completed/);
      expect(r.model.requests[1]!.items.filter((i) => i.type === 'tool_result').map((i) => i.callId)).toEqual([
        'p',
        'f',
      ]);
    });
  });
});
