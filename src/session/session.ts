import type { Observable } from 'rxjs';
import type { Item } from '../items.js';

/** A value, a Promise of it, or an Observable whose last value is it. */
export type MaybeAsync<T> = T | PromiseLike<T> | Observable<T>;

/**
 * What `append` is told about a write.
 * - `runId`: the run the Items come from. An append is idempotent per `runId`: a store that already
 *   holds a write for this `runId` stores nothing ("a late write is harmless"). Absent for a bare
 *   `commitPartial(session, partial)`, which is then not idempotent.
 * - `signal`: aborts when the write should stop; a run's commit aborts it at `deadlines.commitMs`
 *   with a `TimeoutError` of kind `commit` as its reason. The run has ended `session_error` by then;
 *   a write that lands afterwards must still be all or nothing.
 */
export interface AppendOptions {
  readonly runId?: string;
  readonly signal?: AbortSignal;
}

/**
 * Conversation memory (guarantee 6: scratchpad: only a completed run commits). A run loads the history
 * once (raced against cancel: checkpoint 12: session load), works on a copy (the
 * scratchpad), and only a completed run calls `append` — once, with all its
 * new Items and `{ runId, signal }`, before `run_completed`. `append` is never cancelled ("the commit
 * cannot be cancelled") but it is bounded by `deadlines.commitMs`: past it, or when it throws, rejects
 * or errors, the run ends `run_failed` with `stopReason: 'session_error'` and its Items in `partial`.
 * Every implementation must make `append` idempotent per `runId` (see {@link AppendOptions}).
 * One active run per session: a second concurrent run fails at start.
 */
export interface Session {
  load(): MaybeAsync<readonly Item[]>;
  append(items: readonly Item[], options?: AppendOptions): MaybeAsync<void>;
}
