import { ReplaySubject } from 'rxjs';
import { CancelSignal } from '../cancel/cancel-signal.js';
import { RunCancelledError, RunFailedError } from '../errors.js';
import type { Item } from '../items.js';
import { Mailbox } from '../mailbox/mailbox.js';
import { ON_SETTLED, OWNED_TOKEN } from './internal.js';
import { run } from './run.js';
import { validateRunArgs } from './validate.js';
import type { Agent, RunHandle, RunOptions, RunResult } from './types.js';

/**
 * Starts a run at once (hot) and returns its {@link RunHandle}.
 * `events$` replays every event so far to each subscriber, so a late one
 * still gets the terminal event. `handle.cancel(reason)` fires a token the
 * run owns (a child of `options.cancel`), never the caller's. `result`
 * resolves with the {@link RunResult} or rejects with `RunCancelledError` /
 * `RunFailedError` (an unobserved rejection is not reported as unhandled),
 * always after the terminal event was delivered to `events$`.
 * Throws `ConfigurationError` like `run()`.
 *
 * @example
 * const handle = start(agent, 'task', { cancel$: fromEvent(stopButton, 'click') });
 * handle.mailbox.push('focus on errors');
 * const { output } = await handle.result;
 */
export function start<C = unknown>(agent: Agent<C>, input: string | readonly Item[], options: RunOptions<C> = {}): RunHandle {
  validateRunArgs(input, options); // before anything is made: bad options fail with the field named, as in run()
  const token = options.cancel ? options.cancel.child() : new CancelSignal();
  const mailbox = options.mailbox ?? new Mailbox(options.idGenerator ? { idGenerator: () => options.idGenerator!('item') } : {});
  let committed: readonly Item[] = [];
  let failure: unknown;
  let events$;
  try {
    const internal = {
      [OWNED_TOKEN]: token,
      [ON_SETTLED]: (settled: { items?: readonly Item[]; error?: unknown }) => {
        committed = settled.items ?? committed;
        failure = settled.error;
      },
    };
    events$ = run(agent, input, { ...options, mailbox, ...internal } as RunOptions<C>);
  } catch (err) {
    token.dispose();
    throw err;
  }
  const replay = new ReplaySubject<import('../events.js').RunEvent>();
  let runId = '';
  const result = new Promise<RunResult>((resolve, reject) => {
    events$.subscribe({
      next: (event) => {
        if (event.type === 'run_started') runId = event.runId;
        // The event reaches events$ first, so whoever awaits `result` has seen the terminal event by then.
        replay.next(event);
        if (event.type === 'run_completed') {
          // The new Items are what the run committed; `partial` covers the other outcomes.
          resolve({ runId: event.runId, output: event.output, finishReason: event.finishReason, usage: event.usage, items: committed, undelivered: event.undelivered });
        } else if (event.type === 'run_cancelled') {
          reject(new RunCancelledError({ ...event })); // its message describes the reason totally
        } else if (event.type === 'run_failed') {
          reject(new RunFailedError({ ...event, cause: failure }));
        }
      },
      error: (err) => replay.error(err),
      complete: () => replay.complete(),
    });
  });
  result.catch(() => {});
  return { runId, events$: replay.asObservable(), mailbox, result, cancel: (reason?: unknown) => token.cancel(reason) };
}
