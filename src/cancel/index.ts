/** Cancellation: the re-armable token and the cancel-aware operators (DESIGN.md §3, §4). */
export { CancelSignal, DEFAULT_CANCEL_REASON, type CancelListener } from './cancel-signal.js';
export { takeUntilCancelled, untilCancelled, cancellableTimer, stage, hopThenPoll } from './operators.js';
