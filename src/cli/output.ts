/** A stream the CLI writes to (`process.stdout`, `process.stderr`, or a test double). */
export interface Output {
  write(text: string): unknown;
  readonly isTTY?: boolean;
  /** Width of the terminal in characters (a TTY's `columns`). */
  readonly columns?: number;
}
