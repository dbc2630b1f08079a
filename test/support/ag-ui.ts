/**
 * Helpers for the AG-UI specs: every event checked against @ag-ui/core's own zod schemas (strictly: no key
 * the schema does not name) and the whole stream against @ag-ui/client's `verifyEvents` (the ordering rules
 * an AG-UI client enforces); a compactor that keeps text deltas as `replay: 'compact'` does; a normal form
 * of a frame stream in which content chunking does not matter.
 */
import type { AGUIEvent } from '@ag-ui/core';
import { EventSchema } from '@ag-ui/core/schemas';
import { verifyEvents } from '@ag-ui/client';
import { from, lastValueFrom, toArray } from 'rxjs';
import { z } from 'zod';
import type { CompactTextDelta, RunEvent } from '../../src/index.js';

const byType = new Map<string, z.ZodObject>(
  (EventSchema as unknown as { options: z.ZodObject[] }).options.map((s) => [
    (s.shape.type as z.ZodLiteral<string>).value,
    s,
  ]),
);

/** Parses `event` with @ag-ui/core's EventSchema and, strictly, with the schema of its type; returns it. */
export function checkAgUiEvent(event: AGUIEvent): AGUIEvent {
  EventSchema.parse(event);
  const schema = byType.get(event.type);
  if (!schema) throw new Error(`no schema for ${event.type}`);
  z.strictObject(schema.shape).parse(event);
  JSON.parse(JSON.stringify(event)); // what the encoder does: must not throw
  return event;
}

/** Every event schema-checked, then the stream through @ag-ui/client's verifyEvents; rejects on a violation. */
export async function checkAgUiStream(events: readonly AGUIEvent[]): Promise<void> {
  events.forEach(checkAgUiEvent);
  await lastValueFrom(from(events as AGUIEvent[]).pipe(verifyEvents(false) as never, toArray()));
}

/**
 * What `replay: 'compact'` keeps: each run of consecutive `text_delta`s (consecutive seqs) as one event with
 * `seq` of the last, `fromSeq` and `offsets`.
 */
export function compactEvents(events: readonly RunEvent[]): RunEvent[] {
  const out: RunEvent[] = [];
  for (const e of events) {
    const prev = out.at(-1);
    if (e.type === 'text_delta' && prev?.type === 'text_delta' && prev.seq === e.seq - 1) {
      const p = prev as Partial<CompactTextDelta> & typeof prev;
      const offsets = p.offsets ?? [0];
      const merged: CompactTextDelta = {
        ...e,
        fromSeq: p.fromSeq ?? p.seq,
        offsets: [...offsets, p.delta.length],
        delta: p.delta + e.delta,
      };
      out[out.length - 1] = merged;
    } else {
      out.push(e);
    }
  }
  return out;
}

/** The stream with consecutive TEXT_MESSAGE_CONTENT of one message merged (chunking is not meaning). */
export function normalForm(events: readonly AGUIEvent[]): AGUIEvent[] {
  const out: AGUIEvent[] = [];
  for (const e of events) {
    const prev = out.at(-1);
    if (e.type === 'TEXT_MESSAGE_CONTENT' && prev?.type === 'TEXT_MESSAGE_CONTENT' && prev.messageId === e.messageId) {
      out[out.length - 1] = { ...prev, delta: prev.delta + e.delta };
    } else {
      out.push(e);
    }
  }
  return out.map((e) => ('timestamp' in e ? { ...e, timestamp: 0 } : e));
}
