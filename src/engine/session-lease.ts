import { Observable, type SchedulerAction, type SchedulerLike, type Subscription } from 'rxjs';
import { describeValue, readProp } from '../describe.js';
import { isConfigurationError } from '../errors.js';
import { toLastValue } from '../last-value.js';
import type { Lease, MaybeAsync, Session } from '../session/session.js';
import { SessionFailure } from './session-failure.js';

/** The session-store calls of a lease, read totally from whatever `acquire` resolved with. */
interface HeldLease {
  readonly renew: () => unknown;
  readonly release: () => unknown;
}

/**
 * A run's lease on its session ("one run per mailbox and session", across processes): taken at run
 * start when the session has `acquire` (in the `session_load` wait, checkpoint 12: session load),
 * renewed every `ttlMs / 3` on the run's scheduler, released before the terminal event on every
 * outcome (guarantee 11: cleanup starts inner to outer). The controller owns it, so it outlives the
 * loop: a completed run keeps renewing while it commits. A renewal that fails (the lease was lost)
 * calls `onLost`; a lease that arrives once the run has ended is released at once (guarantee 9:
 * nothing left behind). Nothing here throws: every value from the store is foreign.
 */
export class SessionLease {
  #lease: HeldLease | undefined;
  #renewal: Subscription | undefined;
  #released = false;

  constructor(
    private readonly runId: string,
    private readonly ttlMs: number,
    private readonly scheduler: SchedulerLike,
    private readonly onLost: (error: unknown) => void,
  ) {}

  /**
   * `session.acquire(runId, { ttlMs })`: completes once the lease is held (then renewing); errors
   * with a {@link SessionFailure}: `configuration_error` for a refusal (`ConcurrentRunError`) or a
   * bad argument, `session_error` for anything else the store failed with.
   */
  acquire$(session: Session): Observable<never> {
    return new Observable<never>((subscriber) => {
      const failed = (error: unknown): void => {
        const stopReason = isConfigurationError(error) ? 'configuration_error' : 'session_error';
        subscriber.error(new SessionFailure(stopReason, error));
      };
      let pending: MaybeAsync<Lease>;
      try {
        pending = session.acquire!(this.runId, { ttlMs: this.ttlMs });
      } catch (error) {
        return failed(error);
      }
      // Not torn down with the wait: a lease that arrives once the run has ended is released.
      toLastValue(pending).subscribe({
        next: (value) => {
          const lease = heldLease(value);
          if (lease === undefined) {
            return failed(new TypeError(`session.acquire() must give a Lease, got ${describeValue(value)}`));
          }
          if (this.#released || subscriber.closed) return quietly(lease.release); // the run ended meanwhile
          this.#hold(lease);
          subscriber.complete();
        },
        error: failed, // a closed subscriber ignores it
      });
    });
  }

  /** Stops renewing and releases the lease, if one is held; idempotent. Its outcome is not awaited. */
  release(): void {
    if (this.#released) return;
    this.#released = true;
    this.#renewal?.unsubscribe();
    const lease = this.#lease;
    this.#lease = undefined;
    if (lease !== undefined) quietly(lease.release);
  }

  #hold(lease: HeldLease): void {
    this.#lease = lease;
    const period = this.ttlMs / 3;
    // Each renewal on its own tick, whether the last one has answered or not: the lease runs from the
    // last renewal that landed, so a slow answer costs nothing while the next one is on time.
    const renew = (): void => {
      call(lease.renew).catch((error: unknown) => {
        if (!this.#released) this.onLost(error);
      });
    };
    this.#renewal = this.scheduler.schedule(function (this: SchedulerAction<unknown>) {
      renew();
      this.schedule(undefined, period);
    }, period);
  }
}

/** The lease's calls, bound; undefined unless `value` has callable `renew` and `release`. */
function heldLease(value: unknown): HeldLease | undefined {
  const renew = readProp(value, 'renew');
  const release = readProp(value, 'release');
  if (typeof renew !== 'function' || typeof release !== 'function') return undefined;
  return { renew: () => renew.call(value), release: () => release.call(value) };
}

/** Calls `fn` as a Promise: a throw or a rejection is a rejection, whatever it returned. */
function call(fn: () => unknown): Promise<unknown> {
  try {
    return Promise.resolve(fn());
  } catch (error) {
    return Promise.reject(error);
  }
}

/** Calls `fn`, dropping its outcome: a late failure of a release is nobody's to handle. */
function quietly(fn: () => unknown): void {
  call(fn).catch(() => {});
}
