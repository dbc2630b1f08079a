/**
 * loopctl/operators: the cancel-aware RxJS operators loopctl's engine is built on, for code that
 * composes its own stages around a {@link CancelSignal} with the same rules (docs/operators.md):
 * - `stage` / `hopThenPoll`: "cancel wins at a stage start": one hop, then a poll of the token,
 *   so a cancel raised in the same tick as the event leading to a stage stops it (the engine
 *   starts every stage this way);
 * - `cancellableTimer`: a timer that gives up on cancel (the engine's run deadline);
 * - `takeUntilCancelled` / `untilCancelled`: a source raced against the token, torn down before
 *   its subscriber hears of the end (for waits of your own; the engine marks its waits itself).
 * Isomorphic: no `node:*` import.
 */
export { stage, hopThenPoll } from '../cancel/stage.js';
export { cancellableTimer } from '../cancel/cancellable-timer.js';
export { takeUntilCancelled, untilCancelled } from '../cancel/take-until-cancelled.js';
