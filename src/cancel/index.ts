/** Cancellation primitives (docs/cancellation.md): the re-armable token and its reasons (operators: `loopctl/operators`). */
export { CancelSignal, DEFAULT_CANCEL_REASON, type CancelListener } from './cancel-signal.js';
export { UNREADABLE_REASON } from './abort-reason.js';
