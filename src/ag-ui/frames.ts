import type { AGUIEvent } from '@ag-ui/core';
import { concatMap, defer, map, type Observable, type OperatorFunction } from 'rxjs';
import type { RunEvent } from '../events.js';
import { isCompactTextDelta, splitCompactText } from '../runs/compact.js';
import { AgUiMapper } from './mapper.js';

/**
 * An AG-UI event with its id on the stream. One `RunEvent` maps to zero or more AG-UI events: the last of
 * them has the id `"<seq>"` (the RunEvent's seq), the ones before it `"<seq>:<k>"` (k from 0). An SSE
 * client that saw the event with id `X` resumes with `Last-Event-ID: X` and gets exactly what follows.
 */
export interface AgUiFrame {
  readonly id: string;
  readonly event: AGUIEvent;
}

/** A place in a run's AG-UI stream: after the events of `seq` (all of them, or up to index `index`). */
export interface EventCursor {
  readonly seq: number;
  /** The index of the last event of `seq`'s group seen; absent: the whole group was seen. */
  readonly index?: number;
}

const EVENT_ID = /^(0|[1-9]\d{0,15})(?::(0|[1-9]\d{0,5}))?$/;

/** Parses a frame id (`"12"` or `"12:0"`); `undefined` for anything else. */
export function parseEventId(id: string): EventCursor | undefined {
  const m = EVENT_ID.exec(id);
  if (!m) return undefined;
  const seq = Number(m[1]);
  if (!Number.isSafeInteger(seq)) return undefined;
  return m[2] === undefined ? { seq } : { seq, index: Number(m[2]) };
}

/** Options of {@link toAgUiFrames} and {@link toAgUi}. */
export interface ToAgUiOptions {
  /** The AG-UI thread of the run (`RUN_STARTED.threadId`); loopctl/http uses the session key. */
  readonly threadId: string;
  /** Leave out every frame up to this place (a resumed stream). The run's events are still mapped from seq 0. */
  readonly after?: EventCursor;
}

/**
 * The operator from a run's `RunEvent`s (from seq 0, as `handle.events$` or `Runs.events` replay them) to
 * {@link AgUiFrame}s. With `after`, the frames a client already has are left out, and a compacted
 * `text_delta` that straddles `after.seq` is cut there (`splitCompactText`), so the client gets exactly the
 * text it missed. Isomorphic; one mapper per subscription.
 */
export function toAgUiFrames(options: ToAgUiOptions): OperatorFunction<RunEvent, AgUiFrame> {
  const { threadId, after } = options;
  const seen = (seq: number, k: number): boolean =>
    after !== undefined && (seq < after.seq || (seq === after.seq && (after.index === undefined || k <= after.index)));
  return (source: Observable<RunEvent>) =>
    defer(() => {
      const mapper = new AgUiMapper(threadId);
      const frames = (event: RunEvent): AgUiFrame[] => {
        const events = mapper.map(event);
        const last = events.length - 1;
        const out: AgUiFrame[] = [];
        events.forEach((e, k) => {
          if (!seen(event.seq, k)) out.push({ id: k === last ? `${event.seq}` : `${event.seq}:${k}`, event: e });
        });
        return out;
      };
      return source.pipe(
        concatMap((event) => {
          if (after === undefined || !isCompactTextDelta(event)) return frames(event);
          const { before, after: missed } = splitCompactText(event, after.seq);
          return [...(before ? frames(before) : []), ...(missed ? frames(missed) : [])];
        }),
      );
    });
}

/**
 * The operator from a run's `RunEvent`s to AG-UI events (docs/ui.md, "Event mapping"): `RUN_STARTED`,
 * `STEP_STARTED`/`STEP_FINISHED` per turn, `TEXT_MESSAGE_*`, `TOOL_CALL_*`, `RUN_FINISHED` (outcome
 * `success` or `cancelled`), `RUN_ERROR`, and loopctl's own facts as `CUSTOM` events (`LOOPCTL_EVENTS`).
 *
 * @example
 * handle.events$.pipe(toAgUi({ threadId: 'chat-1' })).subscribe((e) => res.write(encoder.encodeSSE(e)));
 */
export function toAgUi(options: ToAgUiOptions): OperatorFunction<RunEvent, AGUIEvent> {
  return (source) =>
    source.pipe(
      toAgUiFrames(options),
      map((frame) => frame.event),
    );
}
