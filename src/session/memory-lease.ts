import { leaseLost, refusal } from './lease-errors.js';
import type { Lease } from './session.js';

interface Holder {
  readonly runId: string;
  readonly token: object;
  expiresAt: number;
}

/**
 * One session's lease kept in memory, on the clock `now` (ms): what `MemorySession.acquire` and
 * `MemorySessionStore` use ("one run per mailbox and session"; a lease not renewed within its ttl expires).
 */
export class LeaseSlot {
  #holder: Holder | undefined;

  constructor(
    private readonly now: () => number,
    private readonly name: () => string,
  ) {}

  /** The run holding a live lease, or undefined. */
  holder(): string | undefined {
    const h = this.#holder;
    return h && h.expiresAt > this.now() ? h.runId : undefined;
  }

  /** A new lease for `runId`, or `ConcurrentRunError` naming the run that holds a live one. */
  acquire(runId: string, ttlMs: number): Lease {
    const held = this.holder();
    if (held !== undefined) throw refusal(this.name(), held);
    const holder: Holder = { runId, token: {}, expiresAt: this.now() + ttlMs };
    this.#holder = holder;
    const mine = (): boolean => this.#holder === holder;
    return {
      runId,
      ttlMs,
      renew: async () => {
        // Lost once released or taken over; an expired lease nobody took is still this run's to renew.
        if (!mine()) throw leaseLost(runId, this.name());
        holder.expiresAt = this.now() + ttlMs;
      },
      release: async () => {
        if (mine()) this.#holder = undefined;
      },
    };
  }
}
