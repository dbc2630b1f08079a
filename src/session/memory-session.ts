import type { Item } from '../items.js';
import type { Session } from './session.js';

/**
 * An in-memory {@link Session}: `load()` returns a copy, `append()` adds
 * atomically (one array swap). `writes` counts `append` calls, so a test can
 * assert that a completed run wrote exactly once.
 *
 * @example
 * const session = new MemorySession();
 * await lastValueFrom(run(agent, 'hi', { session }));
 * session.items; // [user, assistant]
 */
export class MemorySession implements Session {
  #items: readonly Item[];
  #writes = 0;

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

  append(items: readonly Item[]): void {
    this.#writes++;
    this.#items = Object.freeze([...this.#items, ...items]);
  }
}
