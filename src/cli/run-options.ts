import { DEFAULTS } from '../defaults.js';
import type { Deadlines } from '../index.js';
import type { CliOptions } from './args.js';

/** The model deadlines of a CLI run, in ms (what the status line shows next to a wait). */
export interface CliDeadlines {
  readonly firstEventMs: number;
  readonly idleMs: number;
  /** Bound of a non-streamed request (applied by the CLI's provider, see `boundNonStreamed`). */
  readonly requestMs: number;
}

/**
 * The deadlines a CLI run uses: `DEFAULTS.deadlines` (first event, idle,
 * non-streamed request), each set to `--timeout` when it is given. The run
 * gets the first two as its `deadlines` (so a streamed request is bounded by
 * silence, never by its length); the third bounds non-streamed requests in
 * the CLI's provider. With the defaults, a server that never answers fails a
 * run after 3 attempts × 60 s plus at most 0.5 + 1 s of backoff: under 200 s.
 */
export function cliDeadlines(options: Pick<CliOptions, 'timeoutMs'>): CliDeadlines {
  const { firstEventMs, idleMs, requestMs } = DEFAULTS.deadlines;
  const t = options.timeoutMs;
  return { firstEventMs: t ?? firstEventMs, idleMs: t ?? idleMs, requestMs: t ?? requestMs };
}

/** The `deadlines` run option of a CLI run (see {@link cliDeadlines}). */
export function runDeadlines(options: Pick<CliOptions, 'timeoutMs'>): Deadlines {
  const { firstEventMs, idleMs } = cliDeadlines(options);
  return { firstEventMs, idleMs };
}
