import { readFileSync } from 'node:fs';
import { isConfigurationError } from '../index.js';
import { HELP, parseCli, UsageError } from './args.js';
import { selectModel } from './model.js';
import { runInteractive } from './interactive.js';
import { runAgent, type CliIO } from './run-agent.js';

/** The package version, read from the package.json next to `src/` or `dist/`. */
export function version(): string {
  try {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version?: string };
    return pkg.version ?? 'unknown';
  } catch {
    return 'unknown';
  }
}

/**
 * The `loopctl` command: parses `argv` (without node and the script), prints
 * help or the version, or runs the agent; resolves with the exit code
 * (0 completed, 1 failed, 2 bad options, 130/143 cancelled by SIGINT/SIGTERM),
 * or, with `--interactive` or no task on a TTY, the prompt loop (./interactive.ts).
 * Bad options and configuration errors are printed on stderr as one
 * `loopctl: …` line naming the option.
 */
export async function main(argv: readonly string[], env: NodeJS.ProcessEnv, io: CliIO): Promise<number> {
  try {
    const command = parseCli(argv, env, (io.stdin ?? process.stdin).isTTY === true);
    if (command.kind === 'help') return void io.stdout.write(HELP), 0;
    if (command.kind === 'version') return void io.stdout.write(`loopctl ${version()}\n`), 0;
    const model = await selectModel(command.options, env);
    try {
      return await (command.options.interactive ? runInteractive : runAgent)(command.options, model, io);
    } finally {
      await model.close();
    }
  } catch (error) {
    if (error instanceof UsageError || isConfigurationError(error)) {
      io.stderr.write(`loopctl: ${error.message}\nTry 'loopctl --help'.\n`);
      return 2;
    }
    io.stderr.write(`loopctl: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    return 1;
  }
}
