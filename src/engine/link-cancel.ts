import type { Subscription } from 'rxjs';
import { cancellableTimer } from '../cancel/cancellable-timer.js';
import { optionalDeadline } from './deadlines.js';
import type { RunController } from './run-controller.js';

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
export function linkCancelSources(rc: RunController<any>, links: Subscription): void {
  const { cancel$, signal, deadlines, steer$ } = rc.opts;
  const token = rc.token;
  if (signal) {
    if (signal.aborted) token.cancel(signal.reason);
    else {
      const onAbort = (): void => token.cancel(signal.reason);
      signal.addEventListener('abort', onAbort, { once: true });
      links.add(() => signal.removeEventListener('abort', onAbort));
    }
  }
  if (cancel$ && !token.isCancelled) {
    links.add(cancel$.subscribe({ next: (reason) => token.cancel(reason), error: () => {} }));
  }
  const runMs = optionalDeadline(deadlines?.runMs);
  if (runMs !== undefined && !token.isCancelled) {
    links.add(cancellableTimer(runMs, token, rc.scheduler).subscribe(() => token.cancel(DEADLINE_REASON)));
  }
  if (steer$) {
    links.add(steer$.subscribe({ next: (text) => rc.mailbox.push(String(text)), error: () => {} }));
  }
}
