// One small import only: main.ts loads this module first, so that the stop handlers
// are in place before the rest of the CLI (the engine, the OpenAI SDK, …) loads.
import { removeTempFilesSync } from '../node/temp-files.js';

/**
 * What stops a CLI run: SIGINT (Ctrl-C), SIGTERM, or 'SIGPIPE', the name the
 * CLI gives to its output being closed (a write to stdout or stderr failed,
 * e.g. EPIPE after `loopctl … | head -1`; Node itself ignores the real
 * SIGPIPE and reports EPIPE instead).
 */
export type StopSignal = 'SIGINT' | 'SIGTERM' | 'SIGPIPE';

/** Exit code of a run cancelled by `signal` (128 + the signal number: 130, 143, 141). */
export function exitCodeFor(signal: StopSignal): number {
  switch (signal) {
    case 'SIGINT':
      return 130;
    case 'SIGTERM':
      return 143;
    case 'SIGPIPE':
      return 141;
  }
}

/**
 * Ends the process now with `code`, even while a libuv thread is blocked
 * (`process.exit` would wait for it): temp files being written are removed
 * first (synchronously), then 130 and 143 are the signal itself, its handler
 * reset to the default action and re-raised (the shell sees 130 or 143);
 * other codes go through `process.exit`.
 */
export function exitAtOnce(code: number): never {
  removeTempFilesSync();
  const signal = code === 130 ? 'SIGINT' : code === 143 ? 'SIGTERM' : undefined;
  if (signal !== undefined) {
    process.removeAllListeners(signal); // the last listener gone, Node restores the default action
    process.kill(process.pid, signal);
  }
  process.exit(code);
}

/**
 * The process's stops for the life of the CLI: handlers for SIGINT and
 * SIGTERM are installed by the constructor (so Node no longer dies of them)
 * and removed by {@link dispose}; {@link raise} feeds stops that are not
 * process signals (a closed output, Ctrl-C read by readline). Each stop goes
 * to the current {@link handle}r; stops arriving while there is none are
 * kept, in order, and delivered to the next one (so a Ctrl-C during start-up
 * is not lost).
 */
export class StopSignals {
  readonly #queued: StopSignal[] = [];
  #handler: ((signal: StopSignal) => void) | undefined;
  readonly #onInt = (): void => this.raise('SIGINT');
  readonly #onTerm = (): void => this.raise('SIGTERM');

  constructor() {
    process.on('SIGINT', this.#onInt);
    process.on('SIGTERM', this.#onTerm);
  }

  /** Delivers `signal` to the current handler, or keeps it for the next one. */
  raise(signal: StopSignal): void {
    if (this.#handler) this.#handler(signal);
    else this.#queued.push(signal);
  }

  /**
   * Makes `handler` the current handler (replacing any), delivers the kept
   * stops to it, and returns the function that removes it (a no-op once
   * another handler replaced it).
   */
  handle(handler: (signal: StopSignal) => void): () => void {
    this.#handler = handler;
    while (this.#handler === handler && this.#queued.length > 0) handler(this.#queued.shift()!);
    return () => {
      if (this.#handler === handler) this.#handler = undefined;
    };
  }

  /** Removes the process handlers (SIGINT and SIGTERM kill the process again); idempotent. */
  dispose(): void {
    process.off('SIGINT', this.#onInt);
    process.off('SIGTERM', this.#onTerm);
    this.#handler = undefined;
  }
}

/** What {@link trapStopSignals} returns: call it to remove the handlers. */
export interface Untrap {
  (): void;
  /** Feeds a stop that did not come as a process signal (Ctrl-C read by readline in terminal mode). */
  raise(signal: StopSignal): void;
}

/**
 * Calls `handler` on each stop of `source` (default: process SIGINT and
 * SIGTERM, trapped by a {@link StopSignals} of its own) until the returned
 * function is called.
 */
export function onStopSignals(handler: (signal: StopSignal) => void, source?: StopSignals): () => void {
  const stops = source ?? new StopSignals();
  const release = stops.handle(handler);
  return () => {
    release();
    if (!source) stops.dispose();
  };
}

/**
 * Traps the stops of `source` (default: process SIGINT and SIGTERM) for the
 * length of a run. The first one calls `onFirst(signal)` (the CLI cancels
 * the run through its CancelSignal and exits once the stop reason is
 * printed); a second one calls `onSecond` (the CLI exits at once, with
 * {@link exitCodeFor} the signal). Returns the function that removes the
 * handler; its `raise` counts as one more stop.
 */
export function trapStopSignals(
  onFirst: (signal: StopSignal) => void,
  onSecond: (signal: StopSignal) => void,
  source?: StopSignals,
): Untrap {
  let seen = false;
  const handler = (signal: StopSignal): void => {
    if (seen) return onSecond(signal);
    seen = true;
    onFirst(signal);
  };
  return Object.assign(onStopSignals(handler, source), { raise: handler });
}
