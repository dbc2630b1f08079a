import type { Observable } from 'rxjs';
import type { RunEvent } from '../events.js';
import type { Item } from '../items.js';
import { createRun } from './create-run.js';
import { defineAgent } from './define-agent.js';
import type { Agent, RunOptions } from './types.js';

/**
 * Runs `agent` on `input` as a cold Observable of {@link RunEvent}s
 * (docs/cancellation.md): each subscription is one run. It emits `run_started`,
 * the turns' events, then exactly one terminal event (`run_completed`,
 * `run_cancelled` or `run_failed`) and completes; it never errors.
 *
 * Cancel it with `options.cancel` (a CancelSignal: sticky, re-armed by the
 * run that saw it fire), `options.cancel$`, `options.signal`, by
 * unsubscribing (the same path, nothing delivered), from a tool or hook
 * (`ctx.cancel`), or with `options.deadlines.runMs`. `run_cancelled` is
 * delivered before `cancel()` returns. Note: an aborted AbortSignal cancels
 * every run it is given, and an emission on a hot `cancel$` before the run
 * subscribed is not seen; use a CancelSignal for re-armable semantics.
 *
 * Throws `ConfigurationError` naming the field for invalid input or options,
 * before anything runs.
 *
 * @example
 * run(agent, 'Summarise the logs', { cancel, mailbox })
 *   .subscribe(event => console.log(event.type));
 */
export function run<C = unknown>(
  agent: Agent<C>,
  input: string | readonly Item[],
  options: RunOptions<C> = {},
): Observable<RunEvent> {
  // A plain definition (JavaScript callers) is validated here like defineAgent does; a defined agent passes through.
  return createRun(defineAgent(agent), input, options);
}
