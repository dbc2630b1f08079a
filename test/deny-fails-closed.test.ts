import { map, timer, type Observable } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  defineAgent,
  run,
  tool,
  type HookReturn,
  type Hooks,
  type RunEvent,
  type TerminalEvent,
} from '../src/index.js';
import { collectEvents, scriptedModel } from '../src/testing/index.js';

/**
 * A policy hook fails closed. `beforeToolCall` may deny with any truthy `deny`
 * value (a string, `true`, an Error, an object): the tool never runs and the
 * model gets a denial with a readable reason. A return that is neither
 * "allow" (undefined or null) nor a deny (an object with a truthy `deny`) is a
 * hook error: the run fails and no tool of the batch runs. The same holds when
 * the hook returns a Promise or an Observable.
 */

type Variant = 'sync' | 'promise' | 'observable';
const variants: Variant[] = ['sync', 'promise', 'observable'];

function as(variant: Variant, value: unknown): HookReturn<never> {
  if (variant === 'sync') return value as never;
  if (variant === 'promise') return Promise.resolve(value) as never;
  return timer(1).pipe(map(() => value)) as Observable<never>;
}

async function runWith(hooks: Hooks) {
  const executed: string[] = [];
  const echo = tool({
    name: 'echo',
    description: 'd',
    parameters: z.object({ text: z.string() }),
    execute: ({ text }) => (executed.push(text), text),
  });
  const call = (text: string, callId: string) => ({ name: 'echo', arguments: { text }, callId });
  const model = scriptedModel([{ toolCalls: [call('first', 'c1'), call('second', 'c2')] }, 'done']);
  const agent = defineAgent({ name: 'a', instructions: '', model, tools: [echo] });
  const events: RunEvent[] = await collectEvents(run(agent, 'go', { hooks }));
  return { executed, model, events, terminal: events.at(-1) as TerminalEvent };
}

const DENIES: [string, unknown, string][] = [
  ['{ deny: "no" } (a string)', { deny: 'no echo today' }, 'no echo today'],
  ['{ deny: true }', { deny: true }, 'denied by beforeToolCall'],
  ['{ deny: new Error("no") }', { deny: new Error('not allowed') }, 'not allowed'],
  ['{ deny: { reason: "no" } } (an object)', { deny: { reason: 'no' } }, '{"reason":"no"}'],
  ['{ deny: 1 }', { deny: 1 }, '1'],
];

const trapThrower = new Proxy(
  {},
  {
    get: () => () => {
      throw new Error('trap');
    },
  },
) as ProxyHandler<object>;
const MALFORMED: [string, unknown, string][] = [
  ['{ deny: false }', { deny: false }, '{"deny":false}'],
  ['{ deny: "" }', { deny: '' }, '{"deny":""}'],
  ['{} (no deny)', {}, '{}'],
  ['a bare string', 'no', '"no"'],
  ['true', true, 'true'],
  ['a number', 0, '0'],
  ['an array', [], '[]'],
  ['a Proxy that throws on every trap', new Proxy({}, trapThrower), '[unprintable object]'],
];

describe.each(variants)('beforeToolCall fails closed, %s hook', (variant) => {
  for (const [name, verdict, reason] of DENIES) {
    it(`${name} denies: the tool never runs, the model reads "the call was denied: ${reason}"`, async () => {
      const { executed, model, events, terminal } = await runWith({
        beforeToolCall: ({ call }) => as(variant, call.callId === 'c1' ? verdict : undefined),
      });
      expect(executed).toEqual(['second']);
      const message = `the call was denied: ${reason}`;
      expect(events.find((e) => e.type === 'tool_call_failed')).toEqual(
        expect.objectContaining({
          callId: 'c1',
          name: 'echo',
          error: { name: 'ToolCallDenied', message },
          interrupted: false,
        }),
      );
      const started = events.flatMap((e) => (e.type === 'tool_call_started' ? [e.callId] : []));
      expect(started).toEqual(['c2']);
      expect(model.requests[1]!.items.slice(-2)).toEqual([
        { type: 'tool_result', callId: 'c1', output: `Error: ${message}`, isError: true },
        { type: 'tool_result', callId: 'c2', output: 'second', isError: false },
      ]);
      expect(terminal).toMatchObject({ type: 'run_completed', output: 'done' });
    });
  }

  for (const [name, verdict, shown] of MALFORMED) {
    it(`${name} is a malformed return: a HookError fails the run and no tool of the batch runs`, async () => {
      const { executed, model, events, terminal } = await runWith({
        beforeToolCall: ({ call }) => as(variant, call.callId === 'c2' ? verdict : undefined),
      });
      expect(executed).toEqual([]);
      expect(events.some((e) => e.type === 'tool_call_started')).toBe(false);
      expect(model.requests).toHaveLength(1);
      expect(terminal).toMatchObject({
        type: 'run_failed',
        stopReason: 'internal_error',
        error: {
          name: 'HookError',
          // Promise.resolve() itself reads the Proxy's `then`, so that hook rejects with the trap's error.
          message:
            variant === 'promise' && shown === '[unprintable object]'
              ? 'hook beforeToolCall failed: trap'
              : `hook beforeToolCall failed: it returned ${shown}, which is neither undefined (allow) nor ` +
                '{ deny: reason } (deny); return undefined to allow the call',
        },
      });
      // Nothing ran: both calls are paired as interrupted in the partial.
      expect(terminal.type === 'run_failed' && terminal.partial.filter((i) => i.type === 'tool_result')).toEqual([
        expect.objectContaining({ callId: 'c1', interrupted: true }),
        expect.objectContaining({ callId: 'c2', interrupted: true }),
      ]);
    });
  }

  it('null allows, like undefined', async () => {
    const { executed, terminal } = await runWith({ beforeToolCall: () => as(variant, null) });
    expect(executed).toEqual(['first', 'second']);
    expect(terminal.type).toBe('run_completed');
  });

  it('agent hook allows, run hook denies: denied (every hook is asked, the first deny wins)', async () => {
    const executed: string[] = [];
    const run$ = () => (executed.push('x'), 'x');
    const echo = tool({ name: 'echo', description: 'd', parameters: z.object({}), execute: run$ });
    const model = scriptedModel([{ toolCalls: [{ name: 'echo', callId: 'c1' }] }, 'done']);
    const allow: Hooks = { beforeToolCall: () => as(variant, undefined) };
    const agent = defineAgent({ name: 'a', instructions: '', model, tools: [echo], hooks: allow });
    const deny: Hooks = { beforeToolCall: () => as(variant, { deny: true }) };
    const events = await collectEvents(run(agent, 'go', { hooks: deny }));
    expect(executed).toEqual([]);
    const failed = events.find((e) => e.type === 'tool_call_failed');
    expect(failed).toMatchObject({ error: { message: 'the call was denied: denied by beforeToolCall' } });
  });
});
