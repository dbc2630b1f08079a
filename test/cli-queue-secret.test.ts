/**
 * `loopctl serve --queue` and `loopctl worker --queue` sign what they exchange through Redis with
 * LOOPCTL_QUEUE_SECRET (docs/scale-out.md, "Trust boundary"): without it, or with one shorter than 32 bytes,
 * each exits 2 before it opens anything, with one line that shows the command that sets a key; the value is
 * never printed.
 */
import { describe, expect, it } from 'vitest';
import { runMain } from './support/cli-main.js';

const SET = 'export LOOPCTL_QUEUE_SECRET=$(openssl rand -hex 32)';
// Port 1: nothing listens; the secret is checked before Redis is.
const commands = [
  ['worker', '--queue', 'redis://127.0.0.1:1'],
  ['serve', '--port', '0', '--queue', 'redis://127.0.0.1:1'],
];

describe('the queue secret of the CLI', () => {
  for (const argv of commands) {
    const name = argv[0] === 'worker' ? 'loopctl worker --queue' : 'loopctl serve --queue';
    it(`${name} without LOOPCTL_QUEUE_SECRET: exit 2, one line showing the command that sets one`, async () => {
      expect(await runMain(argv, {})).toEqual({
        code: 2,
        stdout: '',
        stderr:
          `loopctl: ${name} signs its runs with a secret shared by serve and every worker, and ` +
          `LOOPCTL_QUEUE_SECRET is not set. Set one in each shell that runs them: ${SET}\n`,
      });
    });

    it(`${name} with a secret shorter than 32 bytes: exit 2 naming its length, never its value`, async () => {
      const { code, stderr } = await runMain(argv, { LOOPCTL_QUEUE_SECRET: 'hunter2-is-short' });
      expect(code).toBe(2);
      expect(stderr).toContain('LOOPCTL_QUEUE_SECRET is 16 bytes; it needs at least 32.');
      expect(stderr).toContain(SET);
      expect(stderr).not.toContain('hunter2');
    });
  }
});
