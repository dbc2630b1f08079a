import { Observable } from 'rxjs';
import type { Redis } from 'ioredis';
import { sliceAfterSeq } from '../engine/replay.js';
import { isTerminalEvent, type RunEvent } from '../events.js';
import { isCompactTextDelta } from '../runs/compact.js';
import type { Channels } from './channels.js';
import { RunNotFoundError } from '../runs/errors.js';
import { entryId, seqOf, type Keys } from './keys.js';

/** How often a reader also reads the stream, in case a published event was missed (ms). */
const POLL_MS = 1000;
/** Entries read per XRANGE. */
const PAGE = 500;
/**
 * How long a run's hash may be gone (Redis lost its keys: a restart that kept nothing, a flush) before a reader
 * ends with `RunNotFoundError` (ms): its worker, when it lives, stores the terminal alone within a heartbeat.
 */
export const VANISHED_RUN_MS = 5000;

/** The event JSON of a stream entry's fields (`['e', json]`). */
function fieldE(fields: string[]): string | undefined {
  for (let i = 0; i + 1 < fields.length; i += 2) if (fields[i] === 'e') return fields[i + 1];
  return undefined;
}

/**
 * A run's events from its Redis stream, after `afterSeq`, then live ones (published by the writer), up to and
 * including the terminal event; then it completes (at once, emitting nothing, when the run ended at or before
 * `afterSeq`: its hash's `lastSeq` is the terminal's seq). Each event comes once, in `seq` order: a published event
 * that skips ahead first fetches what is between from the stream; one not newer than the last given is
 * dropped. A compacted `text_delta` straddling the last seq given is cut there (`sliceAfterSeq`). Errors with
 * what Redis answered when a read fails, and with `RunNotFoundError` when the run's keys stayed gone for
 * {@link VANISHED_RUN_MS} with no terminal (Redis lost them): no reader waits forever.
 */
export function readEvents(
  redis: Redis,
  channels: Channels,
  keys: Keys,
  runId: string,
  afterSeq: number | undefined,
): Observable<RunEvent> {
  return new Observable<RunEvent>((subscriber) => {
    let last = afterSeq ?? -1;
    let closed = false;
    let chain: Promise<void> = Promise.resolve();
    let vanishedAt: number | undefined;
    const streamKey = keys.events(runId);

    const emit = (seq: number, json: string): void => {
      if (closed || seq <= last) return;
      let event = { ...(JSON.parse(json) as RunEvent), seq } as RunEvent;
      if (isCompactTextDelta(event) && event.fromSeq <= last) event = sliceAfterSeq(event, last)!;
      last = seq;
      subscriber.next(event);
      if (isTerminalEvent(event)) {
        closed = true;
        subscriber.complete();
      }
    };
    const catchUp = async (): Promise<void> => {
      while (!closed) {
        const start = last < 0 ? '-' : `(${entryId(last)}`;
        const entries = (await redis.xrange(streamKey, start, '+', 'COUNT', PAGE)) as [string, string[]][];
        for (const [id, fields] of entries) {
          const json = fieldE(fields);
          if (json !== undefined) emit(seqOf(id), json);
        }
        if (entries.length < PAGE) break;
      }
      // Nothing is after the cursor of a run that ended (afterSeq at or past its terminal): complete now.
      if (closed) return;
      const end = await redis.hget(keys.run(runId), 'lastSeq');
      if (!closed && end !== null && last >= Number(end)) {
        closed = true;
        subscriber.complete();
      }
      if (closed || end !== null || (await redis.exists(keys.run(runId))) === 1) {
        vanishedAt = undefined;
        return;
      }
      vanishedAt ??= Date.now();
      if (Date.now() - vanishedAt >= VANISHED_RUN_MS) throw new RunNotFoundError(runId);
    };
    const schedule = (task: () => Promise<void>): void => {
      chain = chain.then(task).catch((error: unknown) => {
        if (closed) return;
        closed = true;
        subscriber.error(error);
      });
    };
    const onMessage = (message: string): void =>
      schedule(async () => {
        const nl = message.indexOf('\n');
        const seq = Number(message.slice(0, nl));
        if (closed || seq <= last) return;
        if (seq > last + 1) await catchUp();
        emit(seq, message.slice(nl + 1));
      });

    let unlisten: (() => void) | undefined;
    channels.listen(keys.eventChannel(runId), onMessage).then(
      (off) => {
        unlisten = off;
        if (closed) off();
        else schedule(catchUp);
      },
      (error: unknown) => schedule(() => Promise.reject(error)),
    );
    const timer = setInterval(() => schedule(catchUp), POLL_MS);
    timer.unref?.();
    const offReconnect = channels.onReconnect(() => schedule(catchUp));
    return () => {
      closed = true;
      clearInterval(timer);
      offReconnect();
      unlisten?.();
    };
  });
}
