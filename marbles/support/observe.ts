import type { Observable } from 'rxjs';
import type { RunEvent } from '../../src/index.js';
import { eventLabel } from '../../src/testing/index.js';

/**
 * Subscribes a run and records its timeline as `"<frame> <label>"` entries
 * (frame from `scheduler.now()`), its events, and calls `onEvent` for each.
 */
export function observe(
  scheduler: { now(): number },
  events$: Observable<RunEvent>,
  onEvent: (e: RunEvent) => void = () => {},
) {
  const log: string[] = [];
  const events: RunEvent[] = [];
  events$.subscribe((e) => {
    log.push(`${scheduler.now()} ${eventLabel(e)}`);
    events.push(e);
    onEvent(e);
  });
  return { log, events };
}
