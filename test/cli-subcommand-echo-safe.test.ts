/**
 * Terminal safety holds for what loopctl quotes back from the command
 * line too: a subcommand given words names them, and words that came from a
 * script's variable may hold escape sequences. They are shown escaped, on one line.
 */
import { describe, expect, it } from 'vitest';
import { runMain } from './support/cli-main.js';

describe('loopctl worker given a task', () => {
  it('refuses it with the words escaped on one line (exit 2)', async () => {
    const argv = ['worker', '--queue', 'redis://127.0.0.1:1', '\x1b]0;pwned\x07', 'two\nlines', '\u202eevil'];
    const { code, stdout, stderr } = await runMain(argv, {});
    expect(code).toBe(2);
    expect(stdout).toBe('');
    expect(stderr).toMatch(/^loopctl: loopctl worker takes no task \(got "\\u001b\]0;pwned\\u0007 two\\nlines /);
    expect(stderr.split('\n')).toHaveLength(3);
    expect(stderr).not.toMatch(/[\x00-\x08\x0b-\x1f\x7f\u202e]/);
  });
});

describe('loopctl serve given a task', () => {
  it('refuses it with the words escaped on one line (exit 2)', async () => {
    const { code, stdout, stderr } = await runMain(['serve', '\x1b]0;pwned\x07', 'two\nlines'], {});
    expect(code).toBe(2);
    expect(stdout).toBe('');
    // One line per message, every control character written escaped.
    expect(stderr).toMatch(/^loopctl: loopctl serve takes no task \(got "\\u001b\]0;pwned\\u0007 two\\nlines"\)/);
    expect(stderr.split('\n')).toHaveLength(3); // the message, "Try 'loopctl --help'.", and the final ''
    expect(stderr).not.toMatch(/[\x00-\x08\x0b-\x1f\x7f]/);
  });
});
