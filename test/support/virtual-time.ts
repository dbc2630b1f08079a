/**
 * Virtual time for specs whose tools or hooks are Promises: a VirtualTimeScheduler
 * to pass as the `scheduler` run option (the engine then puts its stage hops,
 * timers, deadlines and backoff on it), and two ways to let the run go on
 * without sleeping on the real clock. A Promise's callbacks are microtasks, so
 * each round flushes the scheduler, then yields one event-loop turn
 * (`setImmediate`, no timer) to let them run.
 */
import { VirtualTimeScheduler } from 'rxjs';

/** Rounds of flush + microtasks before giving up: a run that never gets quiet is a bug, not a wait. */
const MAX_ROUNDS = 1_000;

const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

export interface VirtualTime {
  readonly scheduler: VirtualTimeScheduler;
  /** Virtual ms since the start. */
  now(): number;
  /** Runs what is due at the current virtual time and what that releases, until nothing more is due now. */
  idle(): Promise<void>;
  /** Like `idle`, for everything due within the next `ms` virtual ms; the clock then reads `now() + ms`. */
  advance(ms: number): Promise<void>;
  /**
   * Lets all virtual time pass: every action scheduled at any later time runs (with the Promise callbacks it
   * releases) until none is left. After a terminal event, "nothing more happens" means: nothing after this.
   */
  runOut(): Promise<void>;
}

/** A fresh virtual clock at 0. */
export function virtualTime(): VirtualTime {
  const scheduler = new VirtualTimeScheduler();
  async function rounds(until: () => number): Promise<void> {
    for (let i = 0; i < MAX_ROUNDS; i++) {
      scheduler.maxFrames = until();
      scheduler.flush();
      await turn();
      const next = scheduler.actions[0];
      if (next === undefined || next.delay > until()) return;
    }
    throw new Error(`virtual time: still busy after ${MAX_ROUNDS} rounds`);
  }
  return {
    scheduler,
    now: () => scheduler.now(),
    idle: () => rounds(() => scheduler.frame),
    async advance(ms) {
      const until = scheduler.frame + ms;
      await rounds(() => until);
      scheduler.frame = until;
    },
    runOut: () => rounds(() => Number.POSITIVE_INFINITY),
  };
}
