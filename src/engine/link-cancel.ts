import type { Subscription } from 'rxjs';
import { cancellableTimer } from '../cancel/cancellable-timer.js';
import { linkSharedObservable, linkSharedSignal } from '../cancel/shared-source.js';
import { optionalDeadline } from './deadlines.js';
import { describeValue } from '../describe.js';
import type { RunContext } from './run-context.js';

/** The reason a run deadline cancels with (docs/cancellation.md, "Sources of cancel"). */
export const DEADLINE_REASON = Object.freeze({ type: 'deadline' as const });

/**
 * Links every cancel source (docs/cancellation.md) to the run's own token, and
 * merges `steer$` into the mailbox. Everything is added to `links`, which
 * the run tears down before its terminal event, so a long-lived caller
 * signal keeps its listener count (guarantee 9: nothing left behind). The
 * caller's token is only ever listened to (guarantee 8: the caller's token is
 * never fired).
 */
export function linkCancelSources(rc: RunContext<any>, links: Subscription): void {
  const { cancel$, signal, deadlines, steer$ } = rc.opts;
  const token = rc.token;
  const cancelRun = (reason: unknown): void => token.cancel(reason);
  // A shared source is linked once: many live runs given the same signal or cancel$ add one
  // listener or subscription to it between them (no MaxListenersExceededWarning).
  if (signal) links.add(linkSharedSignal(signal, cancelRun));
  if (cancel$ && !token.isCancelled) links.add(linkSharedObservable(cancel$, cancelRun));
  const runMs = optionalDeadline(deadlines?.runMs);
  if (runMs !== undefined && !token.isCancelled) {
    links.add(cancellableTimer(runMs, token, rc.scheduler).subscribe(() => token.cancel(DEADLINE_REASON)));
  }
  if (steer$) {
    // A non-string value is described (never thrown on), then pushed like any steering.
    links.add(steer$.subscribe({ next: (text) => rc.mailbox.push(describeValue(text)), error: () => {} }));
  }
}
