/**
 * Terminal safety (C29) holds for what loopctl quotes back from the command
 * line too: a subcommand that is not available yet names the task to run
 * instead, and words that came from a script's variable may hold escape
 * sequences. They are shown escaped, on one line.
 */
import { describe, expect, it } from 'vitest';
import { main } from '../src/cli/app.js';

function io() {
  const out = { text: '', isTTY: false, write: (t: string) => void (out.text += t) };
  const err = { text: '', isTTY: false, write: (t: string) => void (err.text += t) };
  const exit = (code: number): never => {
    throw new Error(`exit ${code}`);
  };
  return { out, err, io: { stdout: out, stderr: err, exit } };
}

describe('a subcommand not available yet', () => {
  it('quotes the words after it escaped: no control sequence reaches stderr', async () => {
    const { out, err, io: streams } = io();
    const code = await main(['worker', '\x1b]0;pwned\x07', 'two\nlines', '\u202eevil'], {}, streams);
    expect(code).toBe(2);
    expect(out.text).toBe('');
    expect(err.text).toBe(
      'loopctl: the worker command is not available yet in this version (to run ' +
        '"worker \\x1b]0;pwned\\x07 two\\nlines \\u202eevil" as a task: ' +
        'loopctl -- worker \\x1b]0;pwned\\x07 two\\nlines \\u202eevil)\n',
    );
  });
});

describe('loopctl serve given a task', () => {
  it('refuses it with the words escaped on one line (exit 2)', async () => {
    const { out, err, io: streams } = io();
    const code = await main(['serve', '\x1b]0;pwned\x07', 'two\nlines'], {}, streams);
    expect(code).toBe(2);
    expect(out.text).toBe('');
    // One line per message, every control character written escaped.
    expect(err.text).toMatch(/^loopctl: loopctl serve takes no task \(got "\\u001b\]0;pwned\\u0007 two\\nlines"\)/);
    expect(err.text.split('\n')).toHaveLength(3); // the message, "Try 'loopctl --help'.", and the final ''
    expect(err.text).not.toMatch(/[\x00-\x08\x0b-\x1f\x7f]/);
  });
});
