import type { CliIO } from './run-agent.js';
import { exitCodeFor, StopSignals, type StopSignal } from './signals.js';

/**
 * The first stop (SIGINT, SIGTERM) of a long-running subcommand (`serve`, `worker`) as a Promise, so the
 * command shuts down in order; a second stop exits at once with its code (`exitCodeFor`: 130 or 143).
 * `stopped()` is the first stop so far, if any. `exitOnNext()` ends the wait: from then on any stop exits at
 * once (the command is closing its model).
 */
export interface FirstStop {
  readonly whenStopped: Promise<StopSignal>;
  stopped(): StopSignal | undefined;
  exitOnNext(): void;
}

/** See {@link FirstStop}; `io.stops` (the CLI's trapped signals) or a new `StopSignals`. */
export function firstStop(io: Pick<CliIO, 'stops' | 'exit'>): FirstStop {
  const stops = io.stops ?? new StopSignals();
  let stopped: StopSignal | undefined;
  let onStop: (signal: StopSignal) => void = () => undefined;
  const release = stops.handle((signal) => {
    if (stopped !== undefined) return void io.exit(exitCodeFor(signal));
    stopped = signal;
    onStop(signal);
  });
  const whenStopped = new Promise<StopSignal>((resolve) => {
    onStop = resolve;
    if (stopped !== undefined) resolve(stopped);
  });
  return {
    whenStopped,
    stopped: () => stopped,
    exitOnNext() {
      release();
      stops.handle((signal) => io.exit(exitCodeFor(signal)));
    },
  };
}
