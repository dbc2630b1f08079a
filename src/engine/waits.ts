import {
  Observable,
  type MonoTypeOperatorFunction,
  type ObservableInput,
  type SchedulerLike,
  type Unsubscribable,
} from 'rxjs';
import type { CancelSignal } from '../cancel/cancel-signal.js';
import { stage } from '../cancel/stage.js';
import type { CancelPhase } from '../events.js';

/**
 * How deep in a run each wait sits (docs/cancellation.md, "Notes on phases"): the run (turn
 * entry), a turn's model call or session load, its dispatch, a batch's boundary, a call. A tool
 * that executes ranks above a call awaiting approval, which ranks above a hook of its batch
 * ("`tool_call` while any call executes").
 */
const DEPTH: Readonly<Record<CancelPhase, number>> = {
  turn_entry: 0,
  session_load: 1,
  stream_gate: 1,
  backoff: 1,
  model_request: 1,
  model_stream: 1,
  rescue: 1,
  dispatch: 2,
  compaction: 2,
  between_tools: 3,
  wave_boundary: 3,
  hook: 4,
  approval: 5,
  tool_call: 6,
};

/** One live wait; unsubscribing it leaves the wait (idempotent), so it can be added to a Subscriber. */
export class Wait implements Unsubscribable {
  constructor(
    readonly phase: CancelPhase,
    readonly depth: number,
    private readonly waits: Waits,
  ) {}

  unsubscribe(): void {
    this.waits.leave(this);
  }
}

/**
 * Where a run waits now: the set of live waits, each entered when its Observable is subscribed and
 * left when it is finalized (the phase by structure). `run_cancelled.phase` is {@link innermost}.
 */
export class Waits {
  /** Live waits in the order they were entered. A handful at most: a batch's calls, its boundary, a hook. */
  readonly #live: Wait[] = [];

  enter(phase: CancelPhase): Wait {
    const wait = new Wait(phase, DEPTH[phase], this);
    this.#live.push(wait);
    return wait;
  }

  leave(wait: Wait): void {
    const i = this.#live.lastIndexOf(wait);
    if (i !== -1) this.#live.splice(i, 1);
  }

  /**
   * The innermost live wait: the deepest; of equally deep ones the latest entered (a wait that
   * follows another, e.g. the probe after the stream gate, is entered before the other is left).
   * `turn_entry` when nothing is live: between two stages of a turn and after a batch, the next
   * thing the run does is a stage, and the first of them is the next turn's entry.
   */
  get innermost(): CancelPhase {
    let best: Wait | undefined;
    for (const wait of this.#live) if (best === undefined || wait.depth >= best.depth) best = wait;
    return best === undefined ? 'turn_entry' : best.phase;
  }
}

/**
 * Marks the source as a wait at `phase` for as long as it is subscribed (entered on subscribe,
 * left on finalize). The wait is entered before the source is subscribed, so a cancel raised
 * synchronously while subscribing (a tool or hook cancelling its own run) reports it.
 */
export function waitingAt<T>(waits: Waits, phase: CancelPhase): MonoTypeOperatorFunction<T> {
  return (source) =>
    new Observable<T>((subscriber) => {
      subscriber.add(waits.enter(phase));
      source.subscribe(subscriber);
    });
}

/** What a stage needs: the run's token, the scheduler of its hops, and where the run waits. */
export interface StageContext {
  readonly token: CancelSignal;
  readonly hopScheduler: SchedulerLike;
  readonly waits: Waits;
}

/**
 * A stage the run waits at (`phase`) from its subscription on: one hop, then a poll ("cancel wins
 * at a stage start"), then `start()`; the wait lasts until the started work is finalized.
 */
export function stageAt<T>(ctx: StageContext, phase: CancelPhase, start: () => ObservableInput<T>): Observable<T> {
  return new Observable<T>((subscriber) => {
    subscriber.add(ctx.waits.enter(phase));
    stage(ctx.token, start, ctx.hopScheduler).subscribe(subscriber);
  });
}
