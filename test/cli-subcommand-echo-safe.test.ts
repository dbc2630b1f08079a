/**
 * Terminal safety holds for what loopctl quotes back from the command
 * line too: a subcommand given words names them, and words that came from a
 * script's variable may hold escape sequences. They are shown escaped, on one line.
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

describe('loopctl worker given a task', () => {
  it('refuses it with the words escaped on one line (exit 2)', async () => {
    const { out, err, io: streams } = io();
    const argv = ['worker', '--queue', 'redis://127.0.0.1:1', '\x1b]0;pwned\x07', 'two\nlines', '\u202eevil'];
    const code = await main(argv, {}, streams);
    expect(code).toBe(2);
    expect(out.text).toBe('');
    expect(err.text).toMatch(/^loopctl: loopctl worker takes no task \(got "\\u001b\]0;pwned\\u0007 two\\nlines /);
    expect(err.text.split('\n')).toHaveLength(3);
    expect(err.text).not.toMatch(/[\x00-\x08\x0b-\x1f\x7f\u202e]/);
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
