/**
 * Terminal safety: the CLI's one sanitiser for text it did not write
 * (model text, file names and contents, tool output, servers' messages).
 */
import { describe, expect, it } from 'vitest';
import { sanitize, sanitizeLine, StreamSanitizer } from '../src/cli/sanitize.js';

describe('sanitize: control characters are written visibly escaped', () => {
  it('keeps newline and tab, escapes the other C0 controls and DEL', () => {
    expect(sanitize('a\tb\nc')).toBe('a\tb\nc');
    expect(sanitize('\x1b[2J\x07\x00\x7f')).toBe('\\x1b[2J\\x07\\x00\\x7f');
    expect(sanitize('\x1b]0;pwned\x07title')).toBe('\\x1b]0;pwned\\x07title');
  });

  it('escapes the C1 controls U+0080–U+009F (CSI U+009B included) and keeps U+00A0 and up', () => {
    expect(sanitize('\u009b31m\u0080\u009f\u00a0é')).toBe('\\x9b31m\\x80\\x9f\u00a0é');
  });

  it('escapes the bidi overrides and isolates U+202A–U+202E and U+2066–U+2069, not their neighbours', () => {
    expect(sanitize('a\u202ab\u202ec\u2066d\u2069e')).toBe('a\\u202ab\\u202ec\\u2066d\\u2069e');
    expect(sanitize('\u2029\u202f\u2065\u206a')).toBe('\u2029\u202f\u2065\u206a');
  });

  it('turns \\r\\n into \\n and escapes a lone \\r', () => {
    expect(sanitize('one\r\ntwo\rthree\r')).toBe('one\ntwo\\rthree\\r');
  });

  it('sanitizeLine keeps a file name on one line: \\n, \\t and \\r escaped too', () => {
    expect(sanitizeLine('a\nb\tc\r\nd.md')).toBe('a\\nb\\tc\\nd.md');
    expect(sanitizeLine('\x1b[31mred.md')).toBe('\\x1b[31mred.md');
  });
});

describe('StreamSanitizer: the same rule for a streamed answer', () => {
  it('a \\r\\n split across two pieces still becomes \\n; a lone \\r at the end is escaped by flush', () => {
    const s = new StreamSanitizer();
    expect(s.push('one\r')).toBe('one');
    expect(s.push('\ntwo\r')).toBe('\ntwo');
    expect(s.push('x')).toBe('\\rx');
    expect(s.push('\x1b')).toBe('\\x1b');
    expect(s.push('end\r')).toBe('end');
    expect(s.flush()).toBe('\\r');
    expect(s.flush()).toBe('');
  });

  it('reset forgets a held \\r (the answer started over)', () => {
    const s = new StreamSanitizer();
    expect(s.push('a\r')).toBe('a');
    s.reset();
    expect(s.push('\nb')).toBe('\nb');
  });
});
