import { CancelSignal } from '../cancel/cancel-signal.js';
import { RunCancelledError, RunFailedError } from '../errors.js';
import type { Item } from '../items.js';
import { Mailbox } from '../mailbox/mailbox.js';
import { createRun } from './create-run.js';
import { defineAgent } from './define-agent.js';
import type { Settled } from './internals.js';
import { ReplaySubject } from 'rxjs';
import type { RunEvent } from '../events.js';
import type { Agent, RunHandle, RunOptions, RunResult } from './types.js';
import { validateRunArgs } from './validate.js';

/**
 * Starts a run at once (hot) and returns its {@link RunHandle}.
 * `events$` replays every event so far to each subscriber, so a late one
 * still gets the terminal event. `handle.cancel(reason)` fires a token the run owns (a child of
 * `options.cancel`), never the caller's. `result` resolves with the {@link RunResult} or rejects
 * with `RunCancelledError` / `RunFailedError` (an unobserved rejection is not reported as unhandled), always after the
 * terminal event was delivered to `events$`.
 * Throws `ConfigurationError` like `run()`.
 *
 * @example
 * const handle = start(agent, 'task', { cancel$: fromEvent(stopButton, 'click') });
 * handle.mailbox.push('focus on errors');
 * const { output } = await handle.result;
 */
export function start<C = unknown>(
  agent: Agent<C>,
  input: string | readonly Item[],
  options: RunOptions<C> = {},
): RunHandle {
  const defined = defineAgent(agent);
  validateRunArgs(input, options); // before anything is made: bad options fail with the field named, as in run()
  const token = options.cancel ? options.cancel.child() : new CancelSignal();
  let committed: readonly Item[] = [];
  let failure: unknown;
  const onSettled = (settled: Settled): void => {
    committed = settled.items ?? committed;
    failure = settled.error;
  };
  let events$;
  let mailbox: Mailbox;
  try {
    const ids = options.idGenerator;
    mailbox = options.mailbox ?? new Mailbox(ids ? { idGenerator: () => ids('item') } : {});
    events$ = createRun(defined, input, { ...options, mailbox }, { token, onSettled });
  } catch (err) {
    token.dispose();
    throw err;
  }
  const log = new ReplaySubject<RunEvent>();
  let runId = '';
  const result = new Promise<RunResult>((resolve, reject) => {
    events$.subscribe({
      next: (event) => {
        if (event.type === 'run_started') runId = event.runId;
        // The event reaches events$ first, so whoever awaits `result` has seen the terminal event by then.
        log.next(event);
        if (event.type === 'run_completed') {
          // The new Items are what the run committed; `partial` covers the other outcomes.
          const { output, finishReason, usage, undelivered } = event;
          resolve({ runId: event.runId, output, finishReason, usage, items: committed, undelivered });
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
  return { runId, events$: log.asObservable(), mailbox, result, cancel: (reason?: unknown) => token.cancel(reason) };
}
