import { readFileSync } from 'node:fs';
import { budgetOption } from './prices.js';
import { describeValue, isConfigurationError } from '../index.js';
import { isInstance } from '../describe.js';
import { HELP, OPTIONS, parseCli, UsageError } from './args.js';
import { subcommandHelp } from './subcommand-help.js';
import { sanitizeLine } from './sanitize.js';
import { selectModel } from './model.js';
import { runInteractive } from './interactive.js';
import { startCliTelemetry } from './otel.js';
import { runAgent, type CliIO } from './run-agent.js';
import { runScript } from './script.js';
import { loadServe } from './serve/load.js';
import { loadWorker } from './worker/load.js';
import { exitCodeFor, StopSignals, type StopSignal } from './signals.js';
import { runSessions } from './sessions/command.js';
import { openConversation } from './store/conversation.js';
import { StoreError } from './store/open-store.js';

/** The package version, read from the package.json next to `src/` or `dist/`. */
export function version(): string {
  try {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
      version?: string;
    };
    return pkg.version ?? 'unknown';
  } catch {
    return 'unknown';
  }
}

/**
 * The `loopctl` command: parses `argv` (without node and the script), prints
 * help or the version, answers a subcommand, serves the web app (`serve`,
 * ./serve/command.ts), or runs: one task (`once`), the prompt loop
 * (`interactive`, ./interactive.ts) or piped tasks (`script`, ./script.ts), on
 * the conversation the options choose (./store/conversation.ts), or answers
 * `loopctl sessions` (./sessions/command.ts). Resolves with the exit code:
 * 0 completed, 1 failed or the saved conversations cannot be used (one
 * `loopctl: …` line; nothing is deleted), 2 bad options, no task on piped
 * stdin, an optional package a command needs not installed, or the port of `serve` in use, 130/143 cancelled by
 * SIGINT/SIGTERM (`serve`: stopped), 141 output closed.
 * Bad options and configuration errors are printed on stderr as one
 * `loopctl: …` line naming the option.
 *
 * Stops come from `io.stops` (the bin traps them before loading the CLI),
 * else from handlers installed here, first thing. One that comes before the
 * run starts (while the model is set up) cancels it before it starts: the
 * run is not started, `[loopctl] cancelled (reason: SIGINT) before the run
 * started` is printed, and the exit code is the signal's. A second stop
 * before the run, or any stop after it ended, exits at once.
 */
export async function main(argv: readonly string[], env: NodeJS.ProcessEnv, io: CliIO): Promise<number> {
  const stops = io.stops ?? new StopSignals();
  let early: StopSignal | undefined;
  const releaseEarly = stops.handle((signal) => {
    if (early !== undefined) return void io.exit(exitCodeFor(signal));
    early = signal;
  });
  const cancelledEarly = (signal: StopSignal): number => {
    io.stderr.write(`[loopctl] cancelled (reason: ${signal}) before the run started\n`);
    return exitCodeFor(signal);
  };
  try {
    const command = parseCli(argv, env, (io.stdin ?? process.stdin).isTTY === true);
    if (command.kind === 'help') {
      return (void io.stdout.write(command.topic === undefined ? HELP : subcommandHelp(command.topic, OPTIONS)), 0);
    }
    if (command.kind === 'version') return (void io.stdout.write(`loopctl ${version()}\n`), 0);
    if (command.kind === 'subcommand') return await runSessions(command, env, io);
    if (early !== undefined) return cancelledEarly(early);
    if (command.kind === 'serve') {
      releaseEarly();
      const runServe = await loadServe();
      if ('missing' in runServe) return (void io.stderr.write(`loopctl: ${runServe.missing}\n`), 2);
      const settings = { port: command.port, version: version(), ...(command.queue ? { queue: command.queue } : {}) };
      return await runServe(command.options, settings, env, { ...io, stops });
    }
    if (command.kind === 'worker') {
      releaseEarly();
      const runWorker = await loadWorker();
      if ('missing' in runWorker) return (void io.stderr.write(`loopctl: ${runWorker.missing}\n`), 2);
      return await runWorker(command.options, command.queue, env, { ...io, stops });
    }
    // --otel: the SDK and exporter load only now (a missing one is a usage error naming the install command).
    const otelIO = { env, stderr: io.stderr, ...(io.loadModule ? { load: io.loadModule } : {}) };
    const otel = command.options.otel ? await startCliTelemetry(version(), otelIO) : undefined;
    const conversation = await openConversation(command.options, env);
    try {
      const model = await selectModel(command.options, env);
      try {
        budgetOption(command.options, model); // --max-cost without a price: a usage error before anything runs
        if (early !== undefined) return cancelledEarly(early);
        releaseEarly();
        const mode = { once: runAgent, interactive: runInteractive, script: runScript }[command.options.mode];
        const telemetry = otel ? { telemetry: otel.telemetry } : {};
        return await mode(command.options, model, { ...io, stops, ...telemetry }, conversation);
      } finally {
        // The run is over: closing the model or flushing the output.
        stops.handle((signal) => io.exit(exitCodeFor(signal)));
        await model.close();
      }
    } finally {
      await conversation.close();
      // What is left to export goes out, for a bounded time (a collector that does not answer: one warning).
      await otel?.shutdown();
    }
  } catch (error) {
    if (isInstance(error, StoreError)) {
      io.stderr.write(`loopctl: ${sanitizeLine((error as Error).message)}\n`);
      return 1;
    }
    if (isInstance(error, UsageError) || isConfigurationError(error)) {
      io.stderr.write(`loopctl: ${sanitizeLine((error as Error).message)}\nTry 'loopctl --help'.\n`);
      return 2;
    }
    // Whatever was thrown is described, never thrown on ("foreign values are never trusted").
    io.stderr.write(`loopctl: internal error: ${sanitizeLine(describeValue(error, 'error'))}\n`);
    return 1;
  } finally {
    if (io.stops === undefined) stops.dispose();
  }
}
