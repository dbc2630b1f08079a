import { CancelSignal } from '../cancel/cancel-signal.js';
import { RunControl } from '../control/run-control.js';
import type { Suspended } from '../control/suspended.js';
import { RunCancelledError, RunFailedError } from '../errors.js';
import type { Item } from '../items.js';
import { Mailbox } from '../mailbox/mailbox.js';
import { createRun } from './create-run.js';
import { defineAgent } from './define-agent.js';
import type { RunInternals, Settled } from './internals.js';
import { EventLog } from './replay.js';
import type { Agent, RunHandle, RunResult, StartOptions } from './types.js';
import { checkReplay, validateRunArgs } from './validate.js';

/**
 * Starts a run at once (hot) and returns its {@link RunHandle}.
 * `events$` replays the events so far to each subscriber, then the live ones, so a late one
 * still gets the terminal event; `options.replay: 'compact'` keeps consecutive `text_delta`s of
 * one model attempt as one (see `sliceAfterSeq`), so a long streamed answer costs about its text.
 * `handle.cancel(reason)` fires a token the run owns (a child of `options.cancel`), never the
 * caller's. `handle.stop()`, `handle.cancelToolCall()`, `handle.approve()` and `handle.reject()`
 * delegate to `handle.control` (`options.control`, or a `RunControl` of the handle's own;
 * docs/run-control.md). `result`
 * resolves with the {@link RunResult} or rejects with `RunCancelledError` /
 * `RunFailedError` (an unobserved rejection is not reported as unhandled), always after the
 * terminal event was delivered to `events$`.
 * `handle.approve(callId)` / `handle.reject(callId, reason)` decide calls awaiting approval. A run
 * suspended for approval (`approvals: 'suspend'`) resolves `result` with `suspended` set.
 * Throws `ConfigurationError` like `run()` (and for an unknown `options.replay`).
 *
 * @example
 * const handle = start(agent, 'task', { cancel$: fromEvent(stopButton, 'click') });
 * handle.mailbox.push('focus on errors');
 * const { output } = await handle.result;
 */
export function start<C = unknown, O = unknown>(
  agent: Agent<C, O>,
  input: string | readonly Item[],
  options: StartOptions<C> = {},
): RunHandle<O> {
  return startRun(agent, input, options, {});
}

/**
 * Internal: `start()` with what only the package passes (`resume()` passes the suspension it continues,
 * `resumeRun()` the journalled run it continues).
 */
export function startRun<C, O = unknown>(
  agent: Agent<C, O>,
  input: string | readonly Item[],
  options: StartOptions<C>,
  internals: Pick<RunInternals, 'resume' | 'continued'>,
): RunHandle<O> {
  const defined = defineAgent(agent);
  validateRunArgs(input, options); // before anything is made: bad options fail with the field named, as in run()
  const replay = checkReplay(options);
  const control = options.control ?? new RunControl();
  const token = options.cancel ? options.cancel.child() : new CancelSignal();
  let committed: readonly Item[] = [];
  let suspended: Suspended | undefined;
  let failure: unknown;
  const onSettled = (settled: Settled): void => {
    committed = settled.items ?? committed;
    suspended = settled.suspended;
    failure = settled.error;
  };
  let events$;
  let mailbox: Mailbox;
  try {
    mailbox = options.mailbox ?? ownMailbox(options.idGenerator);
    events$ = createRun(defined, input, { ...options, mailbox, control }, { ...internals, token, onSettled });
  } catch (err) {
    token.dispose();
    throw err;
  }
  const log = new EventLog(replay);
  let runId = '';
  const result = new Promise<RunResult<O>>((resolve, reject) => {
    events$.subscribe({
      next: (event) => {
        if (event.type === 'run_started') runId = event.runId;
        // The event reaches events$ first, so whoever awaits `result` has seen the terminal event by then.
        log.push(event);
        if (event.type === 'run_completed') {
          // The new Items are what the run committed; `partial` covers the other outcomes.
          const { stopReason, output, finishReason, usage, undelivered } = event;
          const { runId } = event;
          const base: RunResult<O> = { runId, stopReason, output, finishReason, usage, items: committed, undelivered };
          const { budget, cost } = event;
          const done = { ...base, ...(budget ? { budget } : {}), ...(cost ? { cost } : {}) };
          const valued = 'value' in event ? { ...done, value: event.value as O } : done;
          resolve(suspended === undefined ? valued : { ...valued, suspended });
        } else if (event.type === 'run_cancelled') {
          reject(new RunCancelledError(event)); // its message describes the reason totally
        } else if (event.type === 'run_failed') {
          reject(new RunFailedError({ ...event, cause: failure }));
        }
      },
      error: (err) => log.error(err),
      complete: () => log.complete(),
    });
  });
  result.catch(() => {});
  return handleOf(runId, log, mailbox, result, token, control);
}

/** The mailbox of a run given none, its ids from the run's `idGenerator` (a closure that keeps nothing else). */
function ownMailbox(ids: ((kind: 'run' | 'item') => string) | undefined): Mailbox {
  return new Mailbox(ids ? { idGenerator: () => ids('item') } : {});
}

/**
 * The handle, made in a scope of its own: its `cancel` closure keeps the token alive and nothing
 * else of `start()` (the run's Observable, its agent and options), so a kept handle holds what it
 * replays and little more ("start() memory on long runs").
 */
function handleOf<O>(
  runId: string,
  log: EventLog,
  mailbox: Mailbox,
  result: Promise<RunResult<O>>,
  token: CancelSignal,
  control: RunControl,
): RunHandle<O> {
  return {
    runId,
    events$: log.events$,
    mailbox,
    result,
    control,
    cancel: (reason?: unknown) => token.cancel(reason),
    stop: (options) => control.stop(options),
    cancelToolCall: (callId, reason) => control.cancelToolCall(callId, reason),
    approve: (callId: string) => control.approve(callId),
    reject: (callId: string, reason: string) => control.reject(callId, reason),
  };
}
