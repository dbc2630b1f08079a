import type { CancelSignal } from '../cancel/cancel-signal.js';
import type { Item } from '../items.js';

/** @internal `start()` hands the run a token it owns, so `handle.cancel` never fires the caller's. */
export const OWNED_TOKEN = Symbol('loopctl.ownedToken');
/** @internal Told how the run settled: the Items a completed run committed (`RunResult.items`), or a failed run's original error (`RunFailedError.cause`). */
export const ON_SETTLED = Symbol('loopctl.onSettled');

/** @internal Options only the package itself passes to `run()`. */
export interface InternalRunOptions {
  readonly [OWNED_TOKEN]?: CancelSignal;
  readonly [ON_SETTLED]?: (settled: { readonly items?: readonly Item[]; readonly error?: unknown }) => void;
}

/**
 * @internal The channel a tool uses to relay a sub-run (agent as tool) into
 * its parent: the child's events as `subrun_event`, and its usage summed
 * into the parent's (guarantee 12: sub-runs on a child token).
 */
export const SUBRUN_CHANNEL = Symbol('loopctl.subrunChannel');
export interface SubrunChannel {
  emit(path: readonly string[], event: import('../events.js').RunEvent): void;
  addUsage(usage: import('../items.js').Usage): void;
  /** The parent's time, id and jitter sources, inherited by the sub-run unless it sets its own. */
  readonly inherited: Pick<import('./types.js').RunOptions, 'scheduler' | 'idGenerator' | 'random'>;
}
