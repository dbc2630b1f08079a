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
 * exit code is 141, as for a program killed by SIGPIPE. Any other write error
 * (ENOSPC on a full disk, EIO) stops the run the same way, but what was not
 * written is lost: the exit code is 1, and for stdout one `loopctl:` line on
 * stderr says so.
 */
import { exitAtOnce, StopSignals } from './signals.js';

const stops = new StopSignals();

let outputClosed = false;
let outputFailed = false;
/** Handles a failed write to `name`; a failed stdout is reported on stderr (stdout holds only answers). */
const onOutputError = (name: 'stdout' | 'stderr') => (error: NodeJS.ErrnoException) => {
  if (outputClosed) return;
  outputClosed = true;
  if (error.code !== 'EPIPE') {
    outputFailed = true;
    const line = `loopctl: cannot write to ${name}: ${error.message}; what was not written is lost\n`;
    if (name === 'stdout') process.stderr.write(line);
  }
  stops.raise('SIGPIPE');
};
process.stdout.on('error', onOutputError('stdout'));
process.stderr.on('error', onOutputError('stderr'));
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
  exit: (exitCode) => exitAtOnce(outputFailed && exitCode === 141 ? 1 : exitCode),
  stops,
});
if (!outputClosed) await Promise.all([flushed(process.stdout), flushed(process.stderr)]);
process.exit(outputFailed ? 1 : code);
