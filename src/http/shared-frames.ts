import { map, Observable, Subject, type Subscription } from 'rxjs';
import { toAgUiFrames } from '../ag-ui/frames.js';
import type { Runs } from '../runs/types.js';
import { encodeFrame } from './sse.js';

/** One shared stream: the frames sent so far (while under the cap), the live ones, its readers. */
interface Shared {
  history: string[] | undefined;
  bytes: number;
  readonly live: Subject<string>;
  readers: number;
  source?: Subscription;
}

/**
 * One encoding of a run's AG-UI stream for all of its readers without a cursor (docs/ui.md, "Many readers of
 * one run"). The readers of one run, one principal and one `threadId` that attach with no `Last-Event-ID`
 * share one subscription to `runs.events`, one AG-UI mapping and one SSE encoding per frame: each frame is
 * encoded once (`id:` line included) and the same string is written to every reader, so they get the same
 * bytes. A reader that joins while others are attached gets the frames sent so far, as they were sent, then
 * the live ones. The frames sent are kept for joiners up to `historyBytes` (UTF-16 code units, about bytes);
 * past that the stream keeps its readers but takes no new one, and the next reader starts a new shared stream
 * (from the run's own replay, compacted where the runs compact it). A shared stream ends with the run or when
 * its last reader leaves. A reader with a cursor does not come here: it maps and encodes on its own.
 */
export class SharedFrames {
  readonly #streams = new Map<string, Shared>();

  constructor(
    private readonly runs: Runs,
    private readonly historyBytes: number,
  ) {}

  /** The encoded SSE frames (`id: …\ndata: …\n\n`) of `runId` for `principal`, from its first event. */
  frames(runId: string, principal: string, threadId: string): Observable<string> {
    const key = JSON.stringify([principal, runId, threadId]);
    return new Observable<string>((subscriber) => {
      let shared = this.#streams.get(key);
      const first = shared === undefined;
      if (shared === undefined) {
        shared = { history: [], bytes: 0, live: new Subject<string>(), readers: 0 };
        this.#streams.set(key, shared);
      }
      const s = shared;
      const detach = () => {
        if (this.#streams.get(key) === s) this.#streams.delete(key);
        s.history = undefined;
      };
      s.readers++;
      for (const text of s.history ?? []) subscriber.next(text);
      const own = s.live.subscribe(subscriber);
      if (first) {
        s.source = this.runs
          .events(runId, { principal })
          .pipe(toAgUiFrames({ threadId }), map(encodeFrame))
          .subscribe({
            next: (text) => {
              if (s.history !== undefined) {
                s.bytes += text.length;
                if (s.bytes > this.historyBytes) detach();
                else s.history.push(text);
              }
              s.live.next(text);
            },
            error: (error: unknown) => {
              detach();
              s.live.error(error);
            },
            complete: () => {
              detach();
              s.live.complete();
            },
          });
      }
      return () => {
        own.unsubscribe();
        if (--s.readers === 0) {
          detach();
          s.source?.unsubscribe();
        }
      };
    });
  }

  /** Shared streams that take new readers now (for tests). */
  get size(): number {
    return this.#streams.size;
  }
}
