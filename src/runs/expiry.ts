import type { SchedulerLike, Subscription } from 'rxjs';
import { MAX_DURATION_MS } from '../duration.js';

/** Where {@link Expiry} reads the time and arms its timer: a scheduler, or `Date.now` and an unref'd `setTimeout`. */
export interface ExpiryClock {
  now(): number;
  /** Calls `fire` after `ms` (at most `MAX_DURATION_MS`); the answer cancels it. */
  arm(fire: () => void, ms: number): () => void;
}

/** The clock of `scheduler`, or the wall clock with a timer that never keeps the process alive. */
export function clockOf(scheduler: SchedulerLike | undefined): ExpiryClock {
  if (scheduler !== undefined) {
    return {
      now: () => scheduler.now(),
      arm(fire, ms) {
        const sub: Subscription = scheduler.schedule(fire, ms);
        return () => sub.unsubscribe();
      },
    };
  }
  return {
    now: () => Date.now(),
    arm(fire, ms) {
      const timer = setTimeout(fire, ms);
      timer.unref?.();
      return () => clearTimeout(timer);
    },
  };
}

/**
 * Keys forgotten `ttlMs` after they were last added (`onExpire` is called for each), in the order they
 * expire: every key has the same time to live, so the oldest is always first (a Map keeps insertion order).
 * Expired keys go at `sweep()` (every `localRuns` call sweeps first) or when the one timer fires; the
 * timer is armed only while a key waits, for the head's due time (a delay past 2³¹−1 ms is armed in steps,
 * so it never fires early), so an idle `Expiry` holds no timer.
 */
export class Expiry<K> {
  readonly #due = new Map<K, number>();
  #disarm: (() => void) | undefined;
  #armedFor = Infinity;

  constructor(
    private readonly ttlMs: number,
    private readonly clock: ExpiryClock,
    private readonly onExpire: (key: K) => void,
  ) {}

  get size(): number {
    return this.#due.size;
  }

  /** `key` expires `ttlMs` from now (again, when it was there already). */
  add(key: K): void {
    this.#due.delete(key);
    this.#due.set(key, this.clock.now() + this.ttlMs);
    this.#rearm();
  }

  /** `key` no longer expires. */
  remove(key: K): void {
    this.#due.delete(key);
  }

  /** The oldest key (the next to expire), if any. */
  oldest(): K | undefined {
    for (const key of this.#due.keys()) return key;
    return undefined;
  }

  /** Forgets every key whose time is up. */
  sweep(): void {
    const now = this.clock.now();
    for (const [key, due] of this.#due) {
      if (due > now) break;
      this.#due.delete(key);
      this.onExpire(key);
    }
    this.#rearm();
  }

  #rearm(): void {
    let head: number | undefined;
    for (const due of this.#due.values()) {
      head = due;
      break;
    }
    if (head === undefined) {
      this.#disarm?.();
      this.#disarm = undefined;
      this.#armedFor = Infinity;
      return;
    }
    if (this.#disarm !== undefined && this.#armedFor <= head) return;
    this.#disarm?.();
    this.#armedFor = head;
    const ms = Math.min(MAX_DURATION_MS, Math.max(0, head - this.clock.now()));
    this.#disarm = this.clock.arm(() => {
      this.#disarm = undefined;
      this.#armedFor = Infinity;
      this.sweep();
    }, ms);
  }
}
