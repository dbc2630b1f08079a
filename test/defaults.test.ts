/**
 * Every default is written down once, in DEFAULTS (exported from 'loopctl', deep-frozen), and read from
 * there by the engine, the CLI and the docs: docs/recovery.md holds the table made from it
 * verbatim. Each deadline can be turned off with `false`; a bad value names its field.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { HELP, parseCli } from '../src/cli/args.js';
import { ConfigurationError, DEFAULTS, defineAgent, run } from '../src/index.js';
import { scriptedModel } from '../src/testing/index.js';
import { defaultsTable } from './support/defaults-table.js';

const repoFile = (path: string): string => readFileSync(fileURLToPath(new URL(`../${path}`, import.meta.url)), 'utf8');

describe('DEFAULTS', () => {
  it('holds the library defaults', () => {
    expect(DEFAULTS).toEqual({
      deadlines: { firstEventMs: 60_000, idleMs: 30_000, requestMs: 300_000, commitMs: 30_000, approvalMs: 3_600_000 },
      retry: { maxRetries: 2, initialDelayMs: 500, maxDelayMs: 8_000, multiplier: 2, maxRetryAfterMs: 60_000 },
      maxTurns: 20,
      outputRetries: 1,
      breaker: { failureThreshold: 3, cooldownMs: 30_000 },
      session: { leaseTtlMs: 30_000 },
    });
  });

  it('is frozen all the way down', () => {
    expect(Object.isFrozen(DEFAULTS)).toBe(true);
    const inners = [DEFAULTS.deadlines, DEFAULTS.retry, DEFAULTS.breaker, DEFAULTS.session];
    for (const inner of inners) expect(Object.isFrozen(inner)).toBe(true);
    expect(() => {
      (DEFAULTS.deadlines as { idleMs: number }).idleMs = 1;
    }).toThrow(TypeError);
    expect(DEFAULTS.deadlines.idleMs).toBe(30_000);
  });

  it('docs/recovery.md holds the table made from DEFAULTS, verbatim (docs/library.md links to it)', () => {
    const table = defaultsTable();
    expect(table).toContain('| `deadlines.idleMs` | 30000 | ms |');
    expect(repoFile('docs/recovery.md')).toContain(table);
    expect(repoFile('docs/library.md')).toContain('(recovery.md#default-values)');
  });

  it("the CLI's --help and its --max-turns default agree with DEFAULTS.maxTurns", () => {
    expect(HELP).toContain(`--max-turns <n>     turns before giving up (default ${DEFAULTS.maxTurns})`);
    const parsed = parseCli(['task'], {});
    expect(parsed.kind === 'run' && parsed.options.maxTurns).toBe(DEFAULTS.maxTurns);
  });

  it('an agent without maxTurns gets DEFAULTS.maxTurns', () => {
    expect(defineAgent({ name: 'a', instructions: '', model: scriptedModel([]) }).maxTurns).toBe(DEFAULTS.maxTurns);
  });
});

describe('deadlines: number | false', () => {
  const agent = defineAgent({ name: 'a', instructions: '', model: scriptedModel([]) });
  const fieldOf = (options: object): string | undefined => {
    try {
      run(agent, 'go', options as never);
    } catch (e) {
      expect(e).toBeInstanceOf(ConfigurationError);
      return (e as ConfigurationError).field;
    }
    return undefined;
  };

  it('false is accepted for every deadline', () => {
    for (const key of ['firstEventMs', 'idleMs', 'requestMs', 'toolMs', 'runMs', 'commitMs', 'approvalMs'])
      expect(fieldOf({ deadlines: { [key]: false } }), key).toBeUndefined();
  });

  it('anything else but a positive number names the field', () => {
    for (const key of ['firstEventMs', 'idleMs', 'requestMs', 'toolMs', 'runMs', 'commitMs', 'approvalMs'])
      for (const value of [true, 0, -1, Number.NaN, Number.POSITIVE_INFINITY, '100', null])
        expect(fieldOf({ deadlines: { [key]: value } }), `${key}: ${String(value)}`).toBe(`options.deadlines.${key}`);
  });

  it('retry.maxRetryAfterMs takes a number of ms >= 0 and names its field otherwise', () => {
    expect(fieldOf({ retry: { maxRetryAfterMs: 0 } })).toBeUndefined();
    expect(fieldOf({ retry: { maxRetryAfterMs: 120_000 } })).toBeUndefined();
    for (const value of [-1, Number.NaN, '1', false])
      expect(fieldOf({ retry: { maxRetryAfterMs: value } }), String(value)).toBe('options.retry.maxRetryAfterMs');
  });
});
