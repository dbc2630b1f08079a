/**
 * Durations in the CLI's lines are never shown as "0 s" (docs/cli.md, "Errors name their cause"): `--timeout` takes
 * seconds down to 0.001, and a deadline, a retry's backoff or a wait under a tenth of a second is shown in ms. The
 * CLI with `--timeout 1e-3` on an offline model that waits 200 ms before it answers: each attempt's deadline
 * fires, and every line says "within 1 ms".
 */
import { afterAll, describe, expect, it } from 'vitest';
import { durationText } from '../src/cli/describe-error.js';
import { cliEnv, removeTempFolders, runMain, tempFolder } from './support/cli-main.js';

afterAll(removeTempFolders);

describe('small durations are never shown as 0 s', () => {
  it('durationText: tenths of a second from 0.1 s, whole ms below, "under 1 ms" for a fraction of one', () => {
    const shown = [60_000, 1500, 100, 99.6, 37, 1, 0.4, 0].map((ms) => [ms, durationText(ms)]);
    console.log(`durations: ${JSON.stringify(shown)}`);
    expect(shown).toEqual([
      [60_000, '60 s'],
      [1500, '1.5 s'],
      [100, '0.1 s'],
      [99.6, '100 ms'],
      [37, '37 ms'],
      [1, '1 ms'],
      [0.4, 'under 1 ms'],
      [0, '0 ms'],
    ]);
  });

  it('--timeout 1e-3: the deadline lines say "within 1 ms", no line says "0 s"', async () => {
    const env = { ...cliEnv(), LOOPCTL_OFFLINE_DELAY_MS: '200' };
    const argv = ['--no-save', '--timeout', '1e-3', '--cwd', tempFolder(), 'list the .md files'];
    const { code, stderr } = await runMain(argv, env);
    console.log(stderr);
    expect(code).toBe(1);
    expect(stderr).toContain(
      '[loopctl] failed (model_error): the model sent nothing within 1 ms (first-event deadline) · ',
    );
    expect(stderr).not.toMatch(/\b0 s\b/);
  });
});
