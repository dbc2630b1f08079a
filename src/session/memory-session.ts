import type { Item } from '../items.js';
import type { AppendOptions, Session } from './session.js';

/**
 * An in-memory {@link Session}: `load()` returns a copy, `append()` adds
 * atomically (one array swap) and is idempotent per `runId`: an append whose
 * `runId` was stored before stores nothing ("a late write is harmless").
 * `writes` counts `append` calls (stored or not), so a test can assert that a
 * completed run wrote exactly once.
 *
 * @example
 * const session = new MemorySession();
 * await lastValueFrom(run(agent, 'hi', { session }));
 * session.items; // [user, assistant]
 */
export class MemorySession implements Session {
  #items: readonly Item[];
  #writes = 0;
  readonly #stored = new Set<string>();

  constructor(initial: readonly Item[] = []) {
    this.#items = Object.freeze([...initial]);
  }

  /** The stored history (frozen). */
  get items(): readonly Item[] {
    return this.#items;
  }

  /** How many times `append` has been called. */
  get writes(): number {
    return this.#writes;
  }

  load(): readonly Item[] {
    return this.#items;
  }

  /** Adds `items` at the end, unless `options.runId` was stored already. Synchronous: `signal` is not needed. */
  append(items: readonly Item[], options?: AppendOptions): void {
    this.#writes++;
    const runId = options?.runId;
    if (runId !== undefined) {
      if (this.#stored.has(runId)) return;
      this.#stored.add(runId);
    }
    this.#items = Object.freeze([...this.#items, ...items]);
  }
}
