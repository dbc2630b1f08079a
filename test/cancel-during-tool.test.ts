import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  CancelSignal,
  RunCancelledError,
  defineAgent,
  run,
  start,
  tool,
  type RunEvent,
  type TerminalEvent,
} from '../src/index.js';
import { gate, scriptedModel } from '../src/testing/index.js';
import { virtualTime } from './support/virtual-time.js';

/**
 * Cancel while a tool runs. The model's first step calls
 * `slow_tool`; a second step exists but must never be asked for. The caller
 * cancels its CancelSignal either in its `tool_call_started` handler (the tool
 * then never executes: guarantee 2, nothing starts after a cancel) or once
 * `execute` is running. The tool either ignores its signal and returns "ok"
 * when the test releases its gate (A), or rejects with an abort error when its
 * signal fires (B). Expected in every combination, for `run()` and `start()`:
 * exactly one terminal, `run_cancelled` with phase `tool_call`, and it is last
 * (guarantee 1); the `runEnded` hook sees it once; the model was asked once;
 * the stream closed before `cancel()` returned (guarantee 3); no unhandled
 * rejection. Virtual time: the run gets a VirtualTimeScheduler, so "nothing
 * more happens" is checked after all virtual time has passed, not after a sleep.
 */
const unhandled: unknown[] = [];
const onUnhandled = (reason: unknown): void => void unhandled.push(reason);
beforeEach(() => {
  unhandled.length = 0;
  process.on('unhandledRejection', onUnhandled);
});
afterEach(() => {
  process.off('unhandledRejection', onUnhandled);
});

type Variant = 'A: ignores its signal, returns "ok"' | 'B: rejects with an abort error when its signal fires';
const variants: Variant[] = [
  'A: ignores its signal, returns "ok"',
  'B: rejects with an abort error when its signal fires',
];
type When = 'in the tool_call_started handler' | 'while execute is running';

function setup(variant: Variant) {
  const g = gate();
  const executing = gate();
  const settled = gate<string>();
  const slowTool = tool({
    name: 'slow_tool',
    description: '',
    parameters: z.object({}),
    execute: (_a, ctx) => {
      executing.open();
      return variant.startsWith('A')
        ? g.promise.then(() => (settled.open('returned ok'), 'ok'))
        : new Promise<string>((_r, reject) =>
            ctx.signal.addEventListener('abort', () => {
              settled.open('rejected');
              reject(new DOMException('aborted', 'AbortError'));
            }),
          );
    },
  });
  const model = scriptedModel([{ toolCalls: [{ name: 'slow_tool' }] }, 'step 2 must not happen']);
  const ended: TerminalEvent[] = [];
  const agent = defineAgent({
    name: 'c01',
    instructions: '',
    model,
    tools: [slowTool],
    hooks: { runEnded: ({ outcome }) => void ended.push(outcome) },
  });
  return { variant, g, executing, settled, model, ended, agent, vt: virtualTime() };
}

async function expectOneCancelled(s: ReturnType<typeof setup>, events: RunEvent[], reason: string): Promise<void> {
  // B's abort listener ran synchronously inside the cancel (guarantee 11); A returns "ok" once the gate opens.
  if (s.executing.isOpen && s.variant.startsWith('B')) expect(s.settled.isOpen).toBe(true);
  s.g.open();
  if (s.executing.isOpen) await s.settled.promise;
  await s.vt.runOut(); // whatever the released tool could still cause has happened
  const terminals = events.filter((e) => ['run_completed', 'run_cancelled', 'run_failed'].includes(e.type));
  expect(terminals).toHaveLength(1);
  expect(terminals[0]).toMatchObject({ type: 'run_cancelled', reason, phase: 'tool_call' });
  expect(events.at(-1)).toBe(terminals[0]);
  expect(s.ended).toEqual([terminals[0]]);
  expect(s.model.requests).toHaveLength(1);
  expect(unhandled).toEqual([]);
}

describe('cancel while a tool is executing', () => {
  for (const variant of variants) {
    for (const when of ['in the tool_call_started handler', 'while execute is running'] as When[]) {
      it(`run(): one run_cancelled, runEnded once, M called once, the stream closes (${variant}; cancel ${when})`, async () => {
        const s = setup(variant);
        const T = new CancelSignal();
        const events: RunEvent[] = [];
        let closed = false;
        run(s.agent, 'go', { cancel: T, scheduler: s.vt.scheduler }).subscribe({
          next: (e) => {
            events.push(e);
            if (when === 'in the tool_call_started handler' && e.type === 'tool_call_started')
              T.cancel('user clicked stop');
          },
          complete: () => void (closed = true),
        });
        if (when === 'while execute is running') {
          await s.vt.idle();
          expect(s.executing.isOpen).toBe(true);
          await s.executing.promise;
          T.cancel('user clicked stop');
        } else {
          await s.vt.runOut();
          expect(s.executing.isOpen).toBe(false); // the cancel came before the tool's start: it never ran
        }
        expect(closed).toBe(true); // run_cancelled delivered and the stream closed before cancel() returned
        await expectOneCancelled(s, events, 'user clicked stop');
      });

      it(`start(): handle.result rejects with RunCancelledError, runEnded once (${variant}; cancel ${when})`, async () => {
        const s = setup(variant);
        const T = new CancelSignal();
        const handle = start(s.agent, 'go', { cancel: T, scheduler: s.vt.scheduler });
        const events: RunEvent[] = [];
        handle.events$.subscribe((e) => {
          events.push(e);
          if (when === 'in the tool_call_started handler' && e.type === 'tool_call_started') T.cancel('stop');
        });
        await s.vt.idle();
        if (when === 'while execute is running') {
          expect(s.executing.isOpen).toBe(true);
          await s.executing.promise;
          T.cancel('stop');
        }
        await expect(handle.result).rejects.toBeInstanceOf(RunCancelledError);
        await expectOneCancelled(s, events, 'stop');
      });
    }
  }
});
