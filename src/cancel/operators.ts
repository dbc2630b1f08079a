/** Cancel-aware pipeable operators and sources (docs/cancellation.md). One concept per file. */
export { takeUntilCancelled, untilCancelled } from './take-until-cancelled.js';
export { cancellableTimer } from './cancellable-timer.js';
export { stage, hopThenPoll } from './stage.js';
