import { UsageError } from '../usage-error.js';

/** The port `loopctl serve` listens on when `--port` is not given. */
export const DEFAULT_PORT = 7347;

/**
 * Options of a run that `loopctl serve` has no use for (the page asks, steers and stops), and `loopctl
 * worker`: `--confirm` too (its runs have no one to ask; `serve --confirm` asks in the page).
 */
export const NOT_FOR = { serve: ['interactive', 'json'], worker: ['interactive', 'confirm', 'json'] } as const;

/**
 * Options of a run in the terminal that the runs of `loopctl serve` and `loopctl worker` would ignore: they
 * keep no saved conversation from one run to the next, and export no spans. Each is refused, with why.
 */
export const IGNORED_BY_SERVE: Readonly<Record<string, string>> = {
  continue: 'its runs keep no saved conversation',
  session: 'its runs keep no saved conversation',
  new: 'its runs keep no saved conversation',
  'no-save': 'its runs save nothing anyway',
  store: 'its runs keep no saved conversation',
  otel: 'only runs in the terminal export spans',
};

/**
 * Checks a `loopctl serve` (or `loopctl worker`) command line: no words after the command (the page or the
 * queue gives the tasks), none of the options that only a run in the terminal uses (`--interactive`, `--json`;
 * `--confirm` for `worker`, and for `serve --queue`, whose runs' tools are the workers'), and none it would
 * ignore (the conversation flags, `--otel`).
 * @throws UsageError naming the word or the option.
 */
export function checkServeArgs(
  values: Readonly<Record<string, unknown>>,
  words: readonly string[],
  command: 'serve' | 'worker' = 'serve',
): void {
  if (words.length > 0) {
    const from = command === 'serve' ? 'the page gives them' : 'the queue gives them';
    throw new UsageError(`loopctl ${command} takes no task (got ${JSON.stringify(words.join(' '))}): ${from}`);
  }
  for (const name of NOT_FOR[command]) {
    if (values[name] !== undefined) throw new UsageError(`option --${name} is not an option of loopctl ${command}`);
  }
  if (command === 'serve' && values['confirm'] !== undefined && values['queue'] !== undefined)
    throw new UsageError('option --confirm cannot be combined with --queue: the workers run the tools');
  for (const [name, why] of Object.entries(IGNORED_BY_SERVE)) {
    if (values[name] !== undefined)
      throw new UsageError(`option --${name} is not an option of loopctl ${command}: ${why}`);
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
