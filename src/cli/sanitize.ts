/**
 * Terminal safety: the one rule for every piece of text the CLI did not write
 * itself (model text, file names, file contents, tool output, servers' error
 * messages), on a terminal or not. Such text never reaches the screen as
 * control sequences: each unsafe character is written visibly escaped.
 *
 * Unsafe: C0 controls except `\n` and `\t`, DEL, C1 controls (U+0080–U+009F),
 * and the bidi overrides and isolates U+202A–U+202E and U+2066–U+2069.
 * `\r\n` becomes `\n`; a lone `\r` is escaped. Escapes: `\r`, `\n`, `\t`,
 * `\xNN` below U+0100, `\uNNNN` above.
 */

const UNSAFE = /[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]/g;
const UNSAFE_IN_LINE = /[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]/g;

function escape(char: string): string {
  if (char === '\r') return '\\r';
  if (char === '\n') return '\\n';
  if (char === '\t') return '\\t';
  const code = char.charCodeAt(0);
  return code < 0x100 ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`;
}

/** `text` made safe for a terminal: `\r\n` → `\n`, then every unsafe character escaped (newlines and tabs kept). */
export function sanitize(text: string): string {
  return text.replace(/\r\n/g, '\n').replace(UNSAFE, escape);
}

/**
 * `text` made safe and kept on one line: as {@link sanitize}, and `\n` and
 * `\t` escaped too (a file name holding a newline shows as `a\nb.md`).
 */
export function sanitizeLine(text: string): string {
  return text.replace(/\r\n/g, '\n').replace(UNSAFE_IN_LINE, escape);
}

/**
 * {@link sanitize} for text that arrives in pieces (a streamed answer): a
 * piece ending in `\r` keeps it back until the next piece shows whether a
 * `\n` follows, so `\r\n` split across two pieces still becomes `\n`.
 */
export class StreamSanitizer {
  #heldCR = false;

  /** The safe text of `piece` (and of a `\r` held from the piece before). */
  push(piece: string): string {
    let text = this.#heldCR ? `\r${piece}` : piece;
    this.#heldCR = text.endsWith('\r');
    if (this.#heldCR) text = text.slice(0, -1);
    return sanitize(text);
  }

  /** What is held back (a lone `\r`, escaped), at the end of the stream. */
  flush(): string {
    const held = this.#heldCR;
    this.#heldCR = false;
    return held ? '\\r' : '';
  }

  /** Forgets what is held (the stream was dropped: a restarted answer). */
  reset(): void {
    this.#heldCR = false;
  }
}
