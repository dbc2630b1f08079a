import { UsageError } from '../usage-error.js';

/** The port `loopctl serve` listens on when `--port` is not given. */
export const DEFAULT_PORT = 7347;

/** Options of a run that `loopctl serve` has no use for: the page asks, steers and stops. */
const NOT_FOR_SERVE = ['interactive', 'confirm', 'json'] as const;

/**
 * Checks a `loopctl serve` command line: no words after `serve` (the page gives the tasks), none of the
 * options that only a run in the terminal uses (`--interactive`, `--confirm`, `--json`).
 * @throws UsageError naming the word or the option.
 */
export function checkServeArgs(values: Readonly<Record<string, unknown>>, words: readonly string[]): void {
  if (words.length > 0)
    throw new UsageError(`loopctl serve takes no task (got ${JSON.stringify(words.join(' '))}): the page gives them`);
  for (const name of NOT_FOR_SERVE) {
    if (values[name] !== undefined) throw new UsageError(`option --${name} is not an option of loopctl serve`);
  }
}

/**
 * `--port <n>`: an integer from 0 to 65535 (0: any free port, which the printed address names); default
 * {@link DEFAULT_PORT}.
 * @throws UsageError naming `--port` for anything else.
 */
export function servePort(value: string | undefined): number {
  if (value === undefined) return DEFAULT_PORT;
  const n = Number(value);
  if (!/^\d+$/.test(value.trim()) || !Number.isInteger(n) || n > 65_535)
    throw new UsageError(`option --port must be an integer from 0 to 65535 (got ${JSON.stringify(value)})`);
  return n;
}
