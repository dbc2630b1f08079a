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
    const code = await main(['serve', '\x1b]0;pwned\x07', 'two\nlines', '\u202eevil'], {}, streams);
    expect(code).toBe(2);
    expect(out.text).toBe('');
    expect(err.text).toBe(
      'loopctl: the serve command is not available yet in this version (to run ' +
        '"serve \\x1b]0;pwned\\x07 two\\nlines \\u202eevil" as a task: ' +
        'loopctl -- serve \\x1b]0;pwned\\x07 two\\nlines \\u202eevil)\n',
    );
  });
});
