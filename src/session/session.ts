import type { Observable } from 'rxjs';
import type { Item } from '../items.js';

/** A value, a Promise of it, or an Observable whose last value is it. */
export type MaybeAsync<T> = T | PromiseLike<T> | Observable<T>;

/**
 * Conversation memory (guarantee 6: scratchpad: only a completed run commits). A run loads the history
 * once (raced against cancel: checkpoint 12: session load), works on a copy (the
 * scratchpad), and only a completed run calls `append` — once, with all its
 * new Items, before `run_completed`. `append` is never cancelled ("the commit
 * cannot be cancelled").
 * One active run per session: a second concurrent run fails at start.
 */
export interface Session {
  load(): MaybeAsync<readonly Item[]>;
  append(items: readonly Item[]): MaybeAsync<void>;
}
