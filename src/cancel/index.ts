/**
 * Cancellation primitives (docs/cancellation.md): the re-armable token and its reasons. The
 * cancel-aware operators are the `loopctl/operators` entry (src/operators/index.ts).
 */
export { CancelSignal, DEFAULT_CANCEL_REASON, type CancelListener } from './cancel-signal.js';
export { UNREADABLE_REASON } from './abort-reason.js';
