import { DEFAULTS } from '../../src/index.js';

/** What each default means and its unit; a key of DEFAULTS missing here fails the table test. */
const ROWS: Record<string, { unit: string; meaning: string }> = {
  'deadlines.firstEventMs': { unit: 'ms', meaning: 'a streamed request, from sending to its first event' },
  'deadlines.idleMs': { unit: 'ms', meaning: 'a streamed request, the longest silence between two events' },
  'deadlines.requestMs': { unit: 'ms', meaning: 'a non-streamed request (and a rescue), from sending to its answer' },
  'deadlines.commitMs': { unit: 'ms', meaning: 'the session write of a completed run' },
  'deadlines.approvalMs': {
    unit: 'ms',
    meaning: 'the wait for a decision on a tool call that needs approval; its expiry rejects the call',
  },
  'retry.maxRetries': { unit: 'retries', meaning: 'retries after the first attempt of a model call' },
  'retry.initialDelayMs': { unit: 'ms', meaning: 'the backoff ceiling before the first retry' },
  'retry.maxDelayMs': { unit: 'ms', meaning: 'the cap of the backoff ceiling' },
  'retry.multiplier': { unit: 'factor', meaning: 'the growth of the ceiling from one retry to the next' },
  'retry.maxRetryAfterMs': {
    unit: 'ms',
    meaning: 'the longest server-requested wait (`retry-after`) honoured; a longer one fails at once',
  },
  maxTurns: { unit: 'turns', meaning: "turns before `run_failed` with `stopReason: 'max_turns'`" },
  outputRetries: {
    unit: 'repair turns',
    meaning: "repair turns after an invalid structured answer, before `stopReason: 'output_invalid'`",
  },
  'breaker.failureThreshold': { unit: 'failed attempts', meaning: 'consecutive failed attempts that open the breaker' },
  'breaker.cooldownMs': { unit: 'ms', meaning: 'how long an open breaker stays open' },
  'session.leaseTtlMs': {
    unit: 'ms',
    meaning: 'the lease a run takes on a session that has `acquire`; renewed every third of it',
  },
};

function leaves(value: unknown, path: string[] = []): [string, number][] {
  if (typeof value === 'number') return [[path.join('.'), value]];
  return Object.entries(value as object).flatMap(([k, v]) => leaves(v, [...path, k]));
}

/**
 * The defaults table, made from DEFAULTS: docs/recovery.md holds it verbatim between
 * `<!-- defaults-table -->` and `<!-- /defaults-table -->`.
 */
export function defaultsTable(): string {
  const lines = ['| setting | default | unit | meaning |', '| --- | --- | --- | --- |'];
  for (const [path, value] of leaves(DEFAULTS)) {
    const row = ROWS[path];
    if (!row) throw new Error(`defaults-table: no description for DEFAULTS.${path}`);
    lines.push(`| \`${path}\` | ${value} | ${row.unit} | ${row.meaning} |`);
  }
  return `<!-- defaults-table -->\n${lines.join('\n')}\n<!-- /defaults-table -->`;
}
