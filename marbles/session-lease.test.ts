/**
 * The session lease in the engine ("one run per mailbox and session", across processes; docs/sessions.md,
 * "Leases"): a run whose session has `acquire` takes the lease at its start, in the `session_load` wait
 * (checkpoint 12: session load), renews it every `ttlMs / 3` on the run's scheduler
 * (`DEFAULTS.session.leaseTtlMs`), and releases it before its terminal event on every outcome
 * (guarantee 11: cleanup starts inner to outer). A refusal fails the run `configuration_error`
 * (`ConcurrentRunError`); a lost lease, or a store that fails to lease or load, `session_error`.
 */
import { VirtualTimeScheduler, map, throwError } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { beforeEach, describe, expect, it } from 'vitest';
import {
  CancelSignal,
  DEFAULTS,
  MemorySession,
  ModelCallError,
  SessionStorageError,
  defineAgent,
  run,
  type Lease,
  type RunEvent,
  type RunOptions,
  type Session,
  type TerminalEvent,
} from '../src/index.js';
import { eventLabel, scriptedModel, sequentialIds, type ScriptedStep } from '../src/testing/index.js';

let ts: TestScheduler;
beforeEach(() => {
  ts = new TestScheduler((actual, expected) => expect(actual).toEqual(expected));
});

const TTL = DEFAULTS.session.leaseTtlMs;
const TERMINALS = ['run_completed', 'run_cancelled', 'run_failed'];
const isTerminal = (e: RunEvent): e is TerminalEvent => TERMINALS.includes(e.type);

/**
 * A MemorySession on the virtual clock whose lease calls are written to `log` as `"<frame> <call>"`.
 * With `delay` (a marble), `acquire` answers with an Observable that takes the lease at its value.
 */
function leasedSession(now: () => number, log: string[], delay?: string) {
  const inner = new MemorySession([], { now });
  const held: Lease[] = [];
  const recorded = (lease: Lease): Lease => {
    held.push(lease);
    return {
      runId: lease.runId,
      ttlMs: lease.ttlMs,
      renew: () => (log.push(`${now()} renew`), lease.renew()),
      release: () => (log.push(`${now()} release`), lease.release()),
    };
  };
  const session: Session = {
    load: () => inner.load(),
    append: (items, options) => inner.append(items, options),
    acquire: (runId, options) => {
      log.push(`${now()} acquire ${runId} ${options.ttlMs}`);
      const take = (): Lease => recorded(inner.acquire(runId, options));
      return delay === undefined ? take() : ts.createColdObservable(delay).pipe(map(take));
    },
  };
  /** 'free' when another run can take the lease now, else the refusal's name. */
  const state = (): string => {
    try {
      void inner.acquire('probe', { ttlMs: 1 });
      return 'free';
    } catch (err) {
      return (err as Error).name;
    }
  };
  return { inner, session, held, state };
}

/** Runs `steps`, the events' labels written to `log` as they come (`atTerminal()` added to the terminal's). */
function observe(
  log: string[],
  steps: (ScriptedStep | string)[],
  options: RunOptions,
  atTerminal: () => string = () => '',
  onEvent: (e: RunEvent) => void = () => {},
) {
  const model = scriptedModel(steps, { scheduler: ts });
  const agent = defineAgent({ name: 'a', instructions: '', model });
  const events: RunEvent[] = [];
  run(agent, 'go', { scheduler: ts, idGenerator: sequentialIds(), retry: false, ...options }).subscribe((e) => {
    events.push(e);
    const extra = isTerminal(e) ? atTerminal() : '';
    log.push(`${ts.now()} ${eventLabel(e)}${extra === '' ? '' : ` (${extra})`}`);
    onEvent(e);
  });
  return { model, events };
}

describe('the engine takes, renews and releases the session lease', () => {
  it(`renews every ttl/3 (${TTL / 3} ms) while the run waits; releases before run_completed`, () => {
    ts.run(({ flush }) => {
      const log: string[] = [];
      const { session, state, inner } = leasedSession(() => ts.now(), log);
      observe(log, [{ text: 'done', delayMs: 25_000 }], { session }, state);
      flush();
      expect(log).toEqual([
        '0 run_started',
        `0 acquire run-1 ${TTL}`,
        '0 turn_started',
        '0 model_request_started',
        '10000 renew',
        '20000 renew',
        '25000 text_delta',
        '25000 model_response_completed',
        '25000 turn_completed',
        '25000 release',
        '25000 run_completed (free)', // released before the terminal event: a run started from its handler may take it
      ]);
      expect(inner.items.map((i) => i.type)).toEqual(['user', 'assistant']);
    });
  });

  const outcomes: [string, ScriptedStep, (cancel: CancelSignal) => void, string][] = [
    [
      'cancelled',
      { text: 'late', delayMs: 25_000 },
      (cancel) => ts.schedule(() => cancel.cancel('stop'), 12_000),
      '12000 run_cancelled:model_request (free)',
    ],
    [
      'failed',
      { error: new ModelCallError('bad request', { status: 400 }), delayMs: 12_000 },
      () => {},
      '12000 run_failed:model_error (free)',
    ],
  ];
  for (const [outcome, step, act, terminal] of outcomes) {
    it(`releases before the terminal event of a ${outcome} run, and renews no more`, () => {
      ts.run(({ flush }) => {
        const log: string[] = [];
        const { session, state } = leasedSession(() => ts.now(), log);
        const cancel = new CancelSignal();
        observe(log, [step], { session, cancel }, state);
        act(cancel);
        flush();
        expect(log.slice(1)).toEqual([
          `0 acquire run-1 ${TTL}`,
          '0 turn_started',
          '0 model_request_started',
          '10000 renew',
          '12000 release',
          terminal,
        ]);
      });
    });
  }

  it('refused (another run holds it): run_failed{configuration_error}, ConcurrentRunError; the holder keeps it', () => {
    ts.run(({ flush }) => {
      const log: string[] = [];
      const { session, inner, state } = leasedSession(() => ts.now(), log);
      inner.acquire('elsewhere', { ttlMs: 60_000 });
      const { model, events } = observe(log, ['never asked'], { session });
      flush();
      expect(log).toEqual(['0 run_started', `0 acquire run-1 ${TTL}`, '0 run_failed:configuration_error']);
      expect(events.at(-1)).toMatchObject({
        type: 'run_failed',
        error: {
          name: 'ConcurrentRunError',
          field: 'options.session',
          message: 'options.session: run elsewhere holds the lease on the session',
        },
        partial: [{ type: 'user', text: 'go' }],
      });
      expect(model.requests).toHaveLength(0);
      expect(state()).toBe('ConcurrentRunError');
    });
  });

  it('a cancel while acquiring: run_cancelled{session_load}; the lease that arrives later is released at once', () => {
    ts.run(({ flush }) => {
      const log: string[] = [];
      const { session, state } = leasedSession(() => ts.now(), log, '-----(x|)');
      const cancel = new CancelSignal();
      const { model } = observe(log, ['never asked'], { session, cancel }, state);
      ts.schedule(() => cancel.cancel('stop'), 3);
      flush();
      expect(log).toEqual([
        '0 run_started',
        `0 acquire run-1 ${TTL}`,
        '3 run_cancelled:session_load (free)',
        '5 release',
      ]);
      expect(model.requests).toHaveLength(0);
      expect(state()).toBe('free');
    });
  });

  it('a cancel tied with the stage start ("cancel wins at a stage start"): acquire is never called', () => {
    ts.run(({ flush }) => {
      const log: string[] = [];
      const { session } = leasedSession(() => ts.now(), log);
      const cancel = new CancelSignal();
      const stopAtStart = (e: RunEvent): void => void (e.type === 'run_started' && cancel.cancel('stop'));
      observe(log, ['never asked'], { session, cancel }, undefined, stopAtStart);
      flush();
      expect(log).toEqual(['0 run_started', '0 run_cancelled:turn_entry']);
    });
  });

  it('a store that fails to lease or to load: run_failed{session_error} with its error', () => {
    ts.run(({ flush }) => {
      const broken = new SessionStorageError('s', 'SQLITE_BUSY', 'database is locked (SQLITE_BUSY)');
      const sessions: [string, Session][] = [
        [
          'acquire',
          {
            load: () => [],
            append: () => {},
            acquire: () => {
              throw broken;
            },
          },
        ],
        ['load', { load: () => throwError(() => broken), append: () => {} }],
      ];
      for (const [what, session] of sessions) {
        const log: string[] = [];
        const { events, model } = observe(log, ['never asked'], { session });
        flush();
        expect(log, what).toEqual(['0 run_started', '0 run_failed:session_error']);
        expect(events.at(-1), what).toMatchObject({ error: { name: 'SessionStorageError', code: 'SQLITE_BUSY' } });
        expect(model.requests, what).toHaveLength(0);
      }
    });
  });
});

describe('a lost lease', () => {
  it('a renewal refused (the lease was taken): run_failed{session_error}, ConcurrentRunError', async () => {
    const scheduler = new VirtualTimeScheduler(undefined, 10_000);
    const log: string[] = [];
    const { session, held, state } = leasedSession(() => scheduler.now(), log);
    const model = scriptedModel([{ text: 'late', delayMs: 25_000 }], { scheduler });
    const agent = defineAgent({ name: 'a', instructions: '', model });
    const events: RunEvent[] = [];
    run(agent, 'go', { session, scheduler, idGenerator: sequentialIds() }).subscribe((e) => {
      events.push(e);
      log.push(`${scheduler.now()} ${eventLabel(e)}`);
    });
    scheduler.schedule(() => void held[0]!.release(), 5_000); // another party ends the run's lease
    scheduler.flush(); // up to 10 000: the renewal is asked and refused (a rejection, heard in a microtask)
    await new Promise((resolve) => setImmediate(resolve));
    scheduler.maxFrames = Infinity;
    scheduler.flush();
    expect(log).toEqual([
      '0 run_started',
      `0 acquire run-1 ${TTL}`,
      '0 turn_started',
      '0 model_request_started',
      '10000 renew',
      '10000 release',
      '10000 run_failed:session_error',
    ]);
    expect(events.at(-1)).toMatchObject({
      error: {
        name: 'ConcurrentRunError',
        field: 'options.session',
        message: 'options.session: the lease of run run-1 on the session was lost',
      },
      partial: [{ type: 'user', text: 'go' }],
    });
    expect(model.requests).toHaveLength(1);
    expect(scheduler.actions).toHaveLength(0); // the model request and the renewals are gone
    expect(state()).toBe('free');
  });
});
