/** Cancellation: the re-armable token and the cancel-aware operators (docs/cancellation.md). */
export { CancelSignal, DEFAULT_CANCEL_REASON, type CancelListener } from './cancel-signal.js';
export { UNREADABLE_REASON } from './abort-reason.js';
export { takeUntilCancelled, untilCancelled, cancellableTimer, stage, hopThenPoll } from './operators.js';
