/** The signals that stop a CLI run. */
export type StopSignal = 'SIGINT' | 'SIGTERM';

/** Exit code of a run cancelled by `signal` (128 + the signal number). */
export function exitCodeFor(signal: StopSignal): number {
  return signal === 'SIGINT' ? 130 : 143;
}

/** What {@link trapStopSignals} returns: call it to remove the handlers. */
export interface Untrap {
  (): void;
  /** Feeds a stop that did not come as a process signal (Ctrl-C read by readline in terminal mode). */
  raise(signal: StopSignal): void;
}

/**
 * Calls `handler` on each process SIGINT and SIGTERM (installing handlers
 * keeps Node from dying on them) until the returned function is called.
 */
export function onStopSignals(handler: (signal: StopSignal) => void): () => void {
  const onInt = (): void => handler('SIGINT');
  const onTerm = (): void => handler('SIGTERM');
  process.on('SIGINT', onInt);
  process.on('SIGTERM', onTerm);
  return () => {
    process.off('SIGINT', onInt);
    process.off('SIGTERM', onTerm);
  };
}

/**
 * Traps SIGINT and SIGTERM for the length of a run. The first one calls
 * `onFirst(signal)` (the CLI cancels the run through its CancelSignal and
 * exits once the stop reason is printed); a second one calls `onSecond`
 * (the CLI exits at once, with 130 for SIGINT and 143 for SIGTERM).
 * Returns the function that removes both handlers; its `raise` counts as one
 * more signal.
 */
export function trapStopSignals(onFirst: (signal: StopSignal) => void, onSecond: (signal: StopSignal) => void): Untrap {
  let seen = false;
  const handler = (signal: StopSignal): void => {
    if (seen) return onSecond(signal);
    seen = true;
    onFirst(signal);
  };
  return Object.assign(onStopSignals(handler), { raise: handler });
}
