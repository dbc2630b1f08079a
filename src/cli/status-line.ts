import type { Output } from './output.js';

/**
 * The live status line (what the command is waiting for), drawn on stderr
 * only when stderr is a terminal: these are loopctl's own cursor sequences,
 * never written into a pipe or a file.
 *
 * Two ways to draw, depending on where the cursor is:
 * - at the start of a line: `\r\x1b[K⏵ text` (the line holds the status);
 *   cleared with `\r\x1b[K`;
 * - after a partial line of answer text (a stream gone silent mid-line):
 *   after the text, with the cursor saved before and restored after
 *   (`\x1b7 … \x1b8`), so the answer goes on where it stopped; cleared with
 *   `\x1b[K`. Not drawn when it would not fit on the line (a wrapped status
 *   would move the saved cursor).
 */
export class StatusLine {
  readonly #err: Output;
  #shown: 'line' | 'inline' | undefined;
  /** What is on screen now, to skip a redraw that would change nothing. */
  #drawn = '';

  constructor(err: Output) {
    this.#err = err;
  }

  /** True when stderr is a terminal (otherwise nothing is ever drawn). */
  get enabled(): boolean {
    return this.#err.isTTY === true;
  }

  /** Draws `text` at the start of the line. */
  drawLine(text: string): void {
    if (!this.enabled) return;
    const sequence = `\r\x1b[K⏵ ${text}`;
    if (this.#shown === 'line' && this.#drawn === sequence) return;
    this.#err.write(sequence);
    this.#shown = 'line';
    this.#drawn = sequence;
  }

  /** Draws `text` after a partial answer line whose cursor is at `column` (0-based); skipped when it does not fit. */
  drawInline(text: string, column: number): void {
    if (!this.enabled) return;
    const width = this.#err.columns ?? 80;
    const status = `  ⏵ ${text}`;
    if ((column % width) + status.length >= width) return this.clear();
    const sequence = `\x1b[K\x1b7${status}\x1b8`;
    if (this.#shown === 'inline' && this.#drawn === sequence) return;
    this.#err.write(sequence);
    this.#shown = 'inline';
    this.#drawn = sequence;
  }

  /** Takes the status away (idempotent). */
  clear(): void {
    if (this.#shown === 'line') this.#err.write('\r\x1b[K');
    else if (this.#shown === 'inline') this.#err.write('\x1b[K');
    this.#shown = undefined;
    this.#drawn = '';
  }
}
