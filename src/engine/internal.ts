import type { CancelSignal } from '../cancel/cancel-signal.js';
import type { Item } from '../items.js';

/** @internal `start()` hands the run a token it owns, so `handle.cancel` never fires the caller's. */
export const OWNED_TOKEN = Symbol('loopctl.ownedToken');
/** @internal Receives the Items a completed run committed (for `RunResult.items`). */
export const ON_COMMITTED = Symbol('loopctl.onCommitted');

/** @internal Options only the package itself passes to `run()`. */
export interface InternalRunOptions {
  readonly [OWNED_TOKEN]?: CancelSignal;
  readonly [ON_COMMITTED]?: (items: readonly Item[]) => void;
}
