import type { Subscription } from 'rxjs';
import { cancellableTimer } from '../cancel/cancellable-timer.js';
import { describeValue, readProp } from '../describe.js';
import type { RunController } from './run-controller.js';

/** The reason a run deadline cancels with (docs/cancellation.md, "Sources of cancel"). */
export const DEADLINE_REASON = Object.freeze({ type: 'deadline' as const });

/** The reason when an aborted AbortSignal's `reason` cannot be read (its getter throws). */
const UNREADABLE_ABORT_REASON = "aborted (the AbortSignal's reason could not be read)";

/**
 * Links every cancel source (docs/cancellation.md) to the run's own token, and
 * merges `steer$` into the mailbox. Everything is added to `links`, which
 * the run tears down before its terminal event, so a long-lived caller
 * signal keeps its listener count (guarantee 9: nothing left behind). The
 * caller's token is only ever listened to (guarantee 8: the caller's token is
 * never fired).
 */
export function linkCancelSources(rc: RunController<any>, links: Subscription): void {
  const { cancel$, signal, deadlines, steer$ } = rc.opts;
  const token = rc.token;
  if (signal) {
    // Foreign values are never trusted: a throwing `reason` getter must not keep the run from ending.
    const reasonOf = (): unknown => readProp(signal, 'reason', UNREADABLE_ABORT_REASON);
    if (signal.aborted) token.cancel(reasonOf());
    else {
      const onAbort = (): void => token.cancel(reasonOf());
      signal.addEventListener('abort', onAbort, { once: true });
      links.add(() => signal.removeEventListener('abort', onAbort));
    }
  }
  if (cancel$ && !token.isCancelled) {
    links.add(cancel$.subscribe({ next: (reason) => token.cancel(reason), error: () => {} }));
  }
  if (deadlines?.runMs !== undefined && !token.isCancelled) {
    links.add(cancellableTimer(deadlines.runMs, token, rc.scheduler).subscribe(() => token.cancel(DEADLINE_REASON)));
  }
  if (steer$) {
    // A non-string value is described (never thrown on), then pushed like any steering.
    links.add(steer$.subscribe({ next: (text) => rc.mailbox.push(describeValue(text)), error: () => {} }));
  }
}
