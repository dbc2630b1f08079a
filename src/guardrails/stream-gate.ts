import { Subject, type Subscription } from 'rxjs';
import type { RecoveryContext } from '../engine/recovery/types.js';
import type { RunContext } from '../engine/run-context.js';
import type { Fact } from '../engine/totals.js';
import type { RunEventDraft } from '../events.js';
import type { CheckSpec } from './check.js';
import { refusalSpec } from './refusal.js';
import { firstTrip$, type Trip } from './judge.js';
import type { OutputGuardrail, OutputSubject } from './types.js';

const WHOLE: Fact = Object.freeze({ whole: true as const });

/**
 * The end of the last whole chunk of `text` after `from` (docs/guardrails.md, "Chunks"): for `'sentence'`, after a
 * run of `.`, `!`, `?` or `…` (closing quotes and brackets included) followed by white space, or after line breaks;
 * for a number `n`, the last multiple of `n`. `from` when no chunk ended since.
 */
export function lastChunkEnd(text: string, from: number, chunk: 'sentence' | number): number {
  if (typeof chunk === 'number') return Math.max(from, Math.floor(text.length / chunk) * chunk);
  const re = /[.!?…]+["')\]]*\s+|\n+/g;
  re.lastIndex = from;
  let end = from;
  for (let m = re.exec(text); m !== null; m = re.exec(text)) end = m.index + m[0].length;
  return end;
}

/**
 * The text of one run's model attempts under its `'hold'` and `'parallel'` output guardrails (docs/guardrails.md,
 * "Output guardrails"). It stands between the run's model calls and the run's `emit` (the run's ModelCalls are
 * made with {@link StreamGate.context}): each `text_delta` is kept in the attempt's text, passed on at once when
 * none of them holds (`'parallel'`), held back otherwise (`'hold'`). At each chunk's end the stream guardrails
 * check the text up to it (`final: false`), one check at a time, in order; a pass releases the held text up to
 * that end as one `text_delta`, a trip goes to {@link trips$} (the turn ends the run from there) and nothing more
 * is released. A new attempt (`model_request_started`) starts over: held text is dropped, a check in flight
 * abandoned. `output_delta`s are not passed on (the run's calls are not structured under a gate).
 */
export class StreamGate {
  /** The stream guardrails' trips, for the turn that waits on the model call. */
  readonly trips$ = new Subject<Trip>();
  readonly context: RecoveryContext;
  readonly holds: boolean;
  /** The current attempt's text so far, and how much of it the subscriber got, and the stream guardrails passed. */
  text = '';
  released = 0;
  #passed = 0;
  #whole = false;
  #checking: { end: number; sub: Subscription } | undefined;
  #tripped = false;

  constructor(
    private readonly rc: RunContext<any>,
    private readonly guards: readonly OutputGuardrail<any>[],
    private readonly chunk: 'sentence' | number,
  ) {
    this.holds = guards.some((g) => g.mode === 'hold');
    const { token, hopScheduler, waits, scheduler } = rc;
    this.context = { token, hopScheduler, waits, scheduler, emit: (draft, fact) => this.#emit(draft, fact) };
  }

  /** Checks of the stream guardrails on `subject` (`guardrail_started` … for each). */
  specs(subject: OutputSubject, retracted: boolean): CheckSpec<OutputSubject>[] {
    return this.guards.map((guardrail) => ({
      guardrail,
      kind: 'output' as const,
      mode: guardrail.mode === 'hold' ? ('hold' as const) : ('parallel' as const),
      subject,
      retracted,
      ...refusalSpec(guardrail),
    }));
  }

  /** The attempt is over (its response came): no further chunk check; one in flight is abandoned. */
  settle(): void {
    this.#checking?.sub.unsubscribe();
    this.#checking = undefined;
  }

  /** Releases the held text up to `end` as one `text_delta` (nothing when none is held). */
  release(end: number): void {
    if (end <= this.released) return;
    const delta = this.text.slice(this.released, end);
    this.released = end;
    this.rc.emit({ type: 'text_delta', delta }, this.#whole ? WHOLE : undefined);
  }

  #emit(draft: RunEventDraft, fact?: Fact): void {
    if (draft.type === 'model_request_started') {
      this.settle();
      this.text = '';
      this.released = this.#passed = 0;
      this.#whole = false;
      return this.rc.emit(draft, fact);
    }
    if (draft.type === 'output_delta') return;
    if (draft.type !== 'text_delta') return this.rc.emit(draft, fact);
    this.text += draft.delta;
    if (fact?.whole) this.#whole = true;
    if (!this.holds) {
      this.released = this.text.length;
      this.rc.emit(draft, fact);
    }
    this.#next();
  }

  /** Starts the check of the next chunk when none is in flight and a chunk ended since the last one passed. */
  #next(): void {
    if (this.#checking !== undefined || this.#tripped) return;
    const end = lastChunkEnd(this.text, this.#passed, this.chunk);
    if (end <= this.#passed) return;
    const subject: OutputSubject = { text: this.text.slice(0, end), final: false };
    const retracted = !this.holds && this.released > 0;
    const checking = { end, sub: undefined as unknown as Subscription };
    this.#checking = checking;
    checking.sub = firstTrip$(this.rc, this.specs(subject, retracted)).subscribe({
      next: (trip) => {
        this.#tripped = true;
        this.#checking = undefined;
        this.trips$.next(trip);
      },
      error: (err: unknown) => this.trips$.error(err),
      complete: () => {
        if (this.#tripped || this.#checking !== checking) return;
        this.#checking = undefined;
        this.#passed = end;
        if (this.holds) this.release(end);
        this.#next();
      },
    });
  }
}
