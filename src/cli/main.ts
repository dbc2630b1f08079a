#!/usr/bin/env node
/**
 * The `loopctl` bin: `loopctl [options] "task"`, or `loopctl [--interactive]`
 * for the prompt loop (see `loopctl --help` and
 * ./app.ts). Runs from the build without tsx: the package's bin is this module bundled
 * (`dist/bin/loopctl.js`, scripts/bundle-bin.mjs), its compiled form `dist/cli/main.js`.
 *
 * Stops are trapped first, before the rest of the CLI loads (a few tenths of
 * a second): a Ctrl-C then is reported as cancelling the run before it started.
 * A closed stdout or stderr (EPIPE, e.g. `loopctl … | head -1`) is the stop
 * 'SIGPIPE': the run is cancelled quietly (nothing more is written) and the
 * exit code is 141, as for a program killed by SIGPIPE.
 */
import { exitAtOnce, StopSignals } from './signals.js';

const stops = new StopSignals();

let outputClosed = false;
const onOutputError = (): void => {
  if (outputClosed) return;
  outputClosed = true;
  stops.raise('SIGPIPE');
};
process.stdout.on('error', onOutputError);
process.stderr.on('error', onOutputError);
/** `stream`, written to only while both outputs work. */
const guarded = (stream: NodeJS.WriteStream) => ({
  write: (text: string): boolean => outputClosed || stream.write(text),
  get isTTY(): boolean {
    return stream.isTTY === true;
  },
});
const flushed = (stream: NodeJS.WriteStream) => new Promise<void>((resolve) => stream.write('', () => resolve()));

const { main } = await import('./app.js');
const code = await main(process.argv.slice(2), process.env, {
  stdout: guarded(process.stdout),
  stderr: guarded(process.stderr),
  stdin: process.stdin,
  exit: exitAtOnce,
  stops,
});
if (!outputClosed) await Promise.all([flushed(process.stdout), flushed(process.stderr)]);
process.exit(code);
