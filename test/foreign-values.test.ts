import { NEVER, Observable, config } from 'rxjs';
import { z } from 'zod';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  CancelSignal,
  RunCancelledError,
  UNREADABLE_REASON,
  RunFailedError,
  defineAgent,
  describeReason,
  mcpTools,
  serializeError,
  start,
  tool,
  type Item,
  type RunEvent,
  type RunHandle,
  type RunOptions,
  type Session,
  type TerminalEvent,
} from '../src/index.js';
import { stopReason } from '../src/cli/render.js';
import { gate, scriptedModel, type ScriptedStep } from '../src/testing/index.js';
import { fixtureTool, settle, startFixture } from './mcp-server-fixture.js';

/**
 * Foreign values are never trusted: a cancel reason, a thrown value or a steering
 * value the library did not create may be impossible to print (its toString
 * throws, it has no prototype and holds a BigInt, it is a Proxy that throws on
 * every trap, a revoked Proxy, a Symbol). Whatever the source, a run ends with
 * exactly one terminal event, its Observable never errors, `handle.result`
 * settles, and nothing reaches the process as an uncaught exception or an
 * unhandled rejection. Where a value cannot be described, the text says
 * "[unprintable …]" instead of throwing.
 */

interface Hostile {
  readonly make: () => unknown;
  /** How the library describes it, for a label ('reason', 'thrown value', 'object'). */
  readonly text: (label: string) => string;
}

const trapThrower = new Proxy(
  {},
  {
    get: () => () => {
      throw new Error('trap');
    },
  },
);
const HOSTILE: Record<string, Hostile> = {
  'an object whose toString throws': {
    make: () => ({
      toString() {
        throw new Error('toString');
      },
    }),
    text: () => '{"toString":"[function toString]"}',
  },
  'a null-prototype object holding a BigInt': {
    make: () => Object.assign(Object.create(null) as object, { n: 10n }),
    text: () => '{"n":"10"}',
  },
  'a Proxy that throws on every trap': {
    make: () => new Proxy({}, trapThrower as ProxyHandler<object>),
    text: (label) => `[unprintable ${label}]`,
  },
  'a revoked Proxy': {
    make: () => {
      const { proxy, revoke } = Proxy.revocable({}, {});
      revoke();
      return proxy;
    },
    text: (label) => `[unprintable ${label}]`,
  },
  'a Symbol': { make: () => Symbol('hostile'), text: () => 'Symbol(hostile)' },
};

let caught: unknown[] = [];
let previous: typeof config.onUnhandledError;
const onCaught = (err: unknown): void => void caught.push(err);
beforeEach(() => {
  caught = [];
  process.on('uncaughtException', onCaught);
  process.on('unhandledRejection', onCaught);
  previous = config.onUnhandledError;
  config.onUnhandledError = onCaught;
});
afterEach(() => {
  process.off('uncaughtException', onCaught);
  process.off('unhandledRejection', onCaught);
  config.onUnhandledError = previous;
});

interface Observed {
  readonly events: RunEvent[];
  readonly terminal: TerminalEvent;
  readonly result: unknown;
}

const TERMINALS: readonly string[] = ['run_completed', 'run_cancelled', 'run_failed'];
const isTerminal = (e: RunEvent): e is TerminalEvent => TERMINALS.includes(e.type);

/** Starts a run, lets `act` react to its events, and checks the guarantees that hold for every input. */
async function observe(
  steps: (ScriptedStep | string)[],
  options: RunOptions,
  act: (event: RunEvent, handle: RunHandle) => void = () => {},
  tools: Parameters<typeof defineAgent>[0]['tools'] = [],
): Promise<Observed> {
  const agent = defineAgent({ name: 'a', instructions: '', model: scriptedModel(steps), tools });
  const events: RunEvent[] = [];
  let errored = false;
  let completed = false;
  const handle: RunHandle = start(agent, 'go', options);
  handle.events$.subscribe({
    next: (e) => {
      events.push(e);
      act(e, handle);
    },
    error: () => void (errored = true),
    complete: () => void (completed = true),
  });
  const unsettled = Symbol('unsettled');
  const result = await Promise.race([
    handle.result.then(
      (r) => r,
      (e: unknown) => e,
    ),
    new Promise((r) => setTimeout(() => r(unsettled), 10_000)), // a bound for a hang, far below the test timeout
  ]);
  await settle();
  // rxjs reports an unhandled error on a timer with no delay, set during the run; ours, set after, runs after it.
  await new Promise((r) => setTimeout(r, 0));
  expect(errored).toBe(false);
  expect(completed).toBe(true);
  expect(result === unsettled ? 'never settled' : 'settled').toBe('settled');
  expect(events.filter(isTerminal)).toHaveLength(1);
  const terminal = events.at(-1)!;
  expect(isTerminal(terminal)).toBe(true);
  expect(caught.map((e) => describeKind(e))).toEqual([]);
  return { events, terminal: terminal as TerminalEvent, result };
}

/** A caught value as text the test can show, whatever it is. */
function describeKind(e: unknown): string {
  try {
    return e instanceof Error ? `${e.name}: ${e.message}` : typeof e;
  } catch {
    return 'a hostile value';
  }
}

const streaming: ScriptedStep = { text: ['partly'], hold: NEVER };

describe('foreign values never break "exactly one terminal event"', () => {
  for (const [name, hostile] of Object.entries(HOSTILE)) {
    describe(name, () => {
      it('CancelSignal.cancel(reason): run_cancelled with it as given; RunCancelledError describes it', async () => {
        const value = hostile.make();
        const cancel = new CancelSignal();
        const o = await observe([streaming], { cancel }, (e) => void (e.type === 'text_delta' && cancel.cancel(value)));
        expect(o.terminal.type).toBe('run_cancelled');
        expect(o.terminal.type === 'run_cancelled' && o.terminal.reason === value).toBe(true);
        expect(o.result).toBeInstanceOf(RunCancelledError);
        const error = o.result as RunCancelledError;
        expect(error.message).toBe(`run cancelled at model_stream: ${hostile.text('reason')}`);
        expect(error.reason === value).toBe(true);
        expect(cancel.isCancelled).toBe(false); // re-armed
      });

      it('start().cancel(reason): run_cancelled; result rejects with a RunCancelledError describing it', async () => {
        const value = hostile.make();
        const o = await observe([streaming], {}, (e, h) => void (e.type === 'text_delta' && h.cancel(value)));
        expect(o.terminal.type === 'run_cancelled' && o.terminal.reason === value).toBe(true);
        const error = o.result as RunCancelledError;
        expect(error.message).toBe(`run cancelled at model_stream: ${hostile.text('reason')}`);
      });

      it('an MCP call cancelled with it: run_cancelled at tool_call; the server is told "cancelled: …"', async () => {
        const entered = gate();
        const f = await startFixture([fixtureTool('never', () => (entered.open(), new Promise(() => {})))]);
        const value = hostile.make();
        const tools = await mcpTools(f.client);
        const steps: ScriptedStep[] = [{ toolCalls: [{ name: 'never', arguments: {} }] }];
        let handle: RunHandle | undefined;
        void entered.promise.then(() => handle?.cancel(value));
        const o = await observe(steps, {}, (e, h) => void (handle = h), tools);
        expect(o.terminal.type === 'run_cancelled' && o.terminal.phase).toBe('tool_call');
        expect(o.terminal.type === 'run_cancelled' && o.terminal.reason === value).toBe(true);
        await settle();
        const note = `cancelled: ${hostile.text('reason')}`;
        expect(f.cancellations()).toEqual([{ requestId: f.callIds()[0], reason: note }]);
        await f.client.close();
      });

      for (const how of ['throws', 'rejects with'] as const) {
        it(`session.load() ${how} it: run_failed whose error describes it`, async () => {
          const value = hostile.make();
          const session: Session = {
            load: () =>
              how === 'throws'
                ? (() => {
                    throw value;
                  })()
                : Promise.reject(value),
            append: () => {},
          };
          const o = await observe(['never asked'], { session });
          expect(o.terminal.type).toBe('run_failed');
          const error = o.terminal.type === 'run_failed' && o.terminal.error;
          expect(error).toEqual({ name: 'Error', message: hostile.text('thrown value') });
          expect(o.result).toBeInstanceOf(RunFailedError);
        });
      }

      it('session.load() resolves to it: run_failed saying a session must give an array of Items', async () => {
        const value = hostile.make();
        const session: Session = { load: () => value as Item[], append: () => {} }; // (a Promise would read its then)
        const o = await observe(['never asked'], { session });
        const error = o.terminal.type === 'run_failed' && o.terminal.error;
        const message = `session.load() must give an array of Items, got ${hostile.text('object')}`;
        expect(error).toEqual({ name: 'TypeError', message });
      });

      it('session.append() throws it: run_failed whose error describes it, with the partial', async () => {
        const value = hostile.make();
        const session: Session = {
          load: () => [],
          append: () => {
            throw value;
          },
        };
        const o = await observe(['the answer'], { session });
        const failed = o.terminal.type === 'run_failed' ? o.terminal : undefined;
        expect(failed?.error).toEqual({ name: 'Error', message: hostile.text('thrown value') });
        expect(failed?.partial.map((i) => i.type)).toEqual(['user', 'assistant']);
      });

      for (const when of ['already aborted', 'aborted mid-run'] as const) {
        it(`an AbortSignal ${when} whose reason getter throws it: run_cancelled, a reason that says so`, async () => {
          const value = hostile.make();
          const controller = new AbortController();
          Object.defineProperty(controller.signal, 'reason', {
            get() {
              throw value;
            },
          });
          if (when === 'already aborted') controller.abort();
          const abortOnText = (e: RunEvent): void => void (e.type === 'text_delta' && controller.abort());
          const o = await observe([streaming], { signal: controller.signal }, abortOnText);
          const cancelled = o.terminal.type === 'run_cancelled' ? o.terminal : undefined;
          expect(cancelled?.phase).toBe(when === 'already aborted' ? 'turn_entry' : 'model_stream');
          expect(cancelled?.reason).toBe(UNREADABLE_REASON);
        });
      }

      it('steer$ emits it: the value is described and delivered as steering, never thrown on', async () => {
        const value = hostile.make();
        // (rxjs's of() would inspect the value as a scheduler: a plain Observable hands it over untouched)
        const steer$ = new Observable<unknown>((s) => (s.next(value), s.complete())) as Observable<string>;
        const o = await observe(['the answer'], { steer$ });
        expect(o.terminal.type).toBe('run_completed');
        const injected = o.events.filter((e) => e.type === 'user_message_injected');
        expect(injected.map((e) => e.type === 'user_message_injected' && e.content)).toEqual([hostile.text('object')]);
      });

      it('a sub-run cancelling itself with it: the parent gets a tool error describing it and completes', async () => {
        const value = hostile.make();
        const quitter = tool({
          name: 'quit',
          description: 'd',
          parameters: z.object({}),
          execute: (_a, ctx) => (ctx.cancel.cancel(value), 'never seen'),
        });
        const childModel = scriptedModel([{ toolCalls: [{ name: 'quit' }] }]);
        const child = defineAgent({ name: 'child', instructions: '', model: childModel, tools: [quitter] });
        const steps: ScriptedStep[] = [{ toolCalls: [{ name: 'ask', arguments: { input: 'x' } }] }, { text: 'done' }];
        const o = await observe(steps, {}, () => {}, [child.asTool({ name: 'ask', description: 'd' })]);
        expect(o.terminal.type).toBe('run_completed');
        const failed = o.events.find((e) => e.type === 'tool_call_failed');
        const message = `sub-run cancelled: run cancelled at tool_call: ${hostile.text('reason')}`;
        expect(failed?.type === 'tool_call_failed' && failed.error.message).toBe(message);
      });

      it('describeReason, serializeError and the CLI summary line are total', () => {
        const value = hostile.make();
        expect(describeReason(value)).toBe(hostile.text('reason'));
        expect(serializeError(value)).toEqual({ name: 'Error', message: hostile.text('thrown value') });
        const event = { type: 'run_cancelled', reason: value, phase: 'hook' } as unknown as TerminalEvent;
        expect(stopReason(event)).toBe(`cancelled (reason: ${hostile.text('reason')}, phase: hook)`);
      });
    });
  }

  it('an Error whose message and name getters throw is serialised as unreadable, never thrown on', () => {
    const err = new Error('x');
    Object.defineProperty(err, 'message', {
      get() {
        throw new Error('no');
      },
    });
    Object.defineProperty(err, 'name', {
      get() {
        throw new Error('no');
      },
    });
    expect(serializeError(err)).toEqual({ name: 'Error', message: '[unprintable error message]' });
    expect(describeReason(err)).toBe('[unprintable error message]');
  });

  it('start() delivers the terminal event to events$ before it settles result', async () => {
    for (const finish of ['complete', 'cancel', 'fail'] as const) {
      const model = scriptedModel([finish === 'cancel' ? streaming : 'ok']);
      const agent = defineAgent({ name: 'a', instructions: '', model });
      const failing: Session = { load: () => [], append: () => Promise.reject(new Error('disk full')) };
      const session = finish === 'fail' ? failing : undefined;
      const handle = start(agent, 'go', session ? { session } : {});
      const seen: string[] = [];
      handle.events$.subscribe((e) => {
        seen.push(e.type);
        if (finish === 'cancel' && e.type === 'text_delta') handle.cancel('stop');
      });
      const atSettle = await handle.result.then(
        () => [...seen],
        () => [...seen],
      );
      expect(atSettle.at(-1)).toBe({ complete: 'run_completed', cancel: 'run_cancelled', fail: 'run_failed' }[finish]);
    }
  });
});
