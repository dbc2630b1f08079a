import { Observable, map, type OperatorFunction } from 'rxjs';
import { serializeError, type SerializedError } from '../errors.js';
import type { RunEvent } from '../events.js';

/**
 * Maps each event to a short label for marble specs: its `type`, with the
 * phase for `run_cancelled` (`run_cancelled:tool_call`) and the tool name for
 * tool events (`tool_call_started:slow`).
 */
export function eventLabels(): OperatorFunction<RunEvent, string> {
  return map(eventLabel);
}

/** The label {@link eventLabels} gives one event. */
export function eventLabel(e: RunEvent): string {
  if (e.type === 'run_cancelled') return `run_cancelled:${e.phase}`;
  if (e.type === 'run_failed') return `run_failed:${e.stopReason}`;
  if (
    e.type === 'tool_call_started' ||
    e.type === 'tool_call_completed' ||
    e.type === 'tool_call_failed' ||
    e.type === 'tool_call_progress'
  )
    return `${e.type}:${e.name}`;
  return e.type;
}

/** Deterministic ids for `RunOptions.idGenerator`: `run-1`, `item-1`, `item-2`, … */
export function sequentialIds(): (kind: 'run' | 'item') => string {
  const counts = { run: 0, item: 0 };
  return (kind) => `${kind}-${++counts[kind]}`;
}

/**
 * A gate a test opens by hand (no sleeps): `wait$` / `promise` settle when
 * `open(value)` or `fail(error)` is called. `waiting` counts subscribers of
 * `wait$` still waiting.
 */
export interface Gate<T = void> {
  readonly promise: Promise<T>;
  readonly wait$: Observable<T>;
  readonly isOpen: boolean;
  open(value: T): void;
  fail(error: unknown): void;
}

/** Makes a {@link Gate}: a latch a test opens (or fails) by hand. */
export function gate<T = void>(): Gate<T> {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  let isOpen = false;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  promise.catch(() => {});
  return {
    promise,
    wait$: new Observable<T>((s) => {
      promise.then(
        (v) => {
          s.next(v);
          s.complete();
        },
        (e) => s.error(e),
      );
    }),
    get isOpen() {
      return isOpen;
    },
    open(value: T) {
      isOpen = true;
      resolve(value);
    },
    fail(error: unknown) {
      isOpen = true;
      reject(error);
    },
  };
}

/**
 * The core of the `toMatchLoopctlError` matcher (`loopctlMatchers`): any thrown value as a plain
 * `{ name, message, …typed fields }`, so specs compare errors with `toEqual`
 * whatever their class or stack.
 */
export function normalizeError(error: unknown): SerializedError {
  return serializeError(error);
}

/** Collects a run's events (for Promise-based tests): resolves when it completes. */
export function collectEvents(events$: Observable<RunEvent>): Promise<RunEvent[]> {
  return new Promise((resolve, reject) => {
    const out: RunEvent[] = [];
    events$.subscribe({ next: (e) => out.push(e), error: reject, complete: () => resolve(out) });
  });
}

/**
 * Marble helper: subscribes `events$` and records each event as
 * `"<frame>:<label>"` (label from {@link eventLabels}) using `scheduler.now()`,
 * so a spec can compare the exact timeline, ties included, after `flush()`.
 */
export function recordTimeline(scheduler: { now(): number }, events$: Observable<RunEvent>): string[] {
  const out: string[] = [];
  events$.pipe(eventLabels()).subscribe((label) => out.push(`${scheduler.now()}:${label}`));
  return out;
}
