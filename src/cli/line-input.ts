import { createInterface, type Interface } from 'node:readline';
import { Writable } from 'node:stream';
import type { Output } from './render.js';

/** Where {@link LineInput} reads: stdin, or a test double. */
export type LineSource = NodeJS.ReadableStream & { readonly isTTY?: boolean };

/** Options of {@link LineInput}. */
export interface LineInputOptions {
  readonly input: LineSource;
  /** readline's terminal mode (line editing, Ctrl-C as the 'SIGINT' event). Default: `input.isTTY`. */
  readonly terminal?: boolean;
  /** Where readline echoes and draws its prompt in terminal mode (default: stdout if a TTY, else stderr). */
  readonly echo?: NodeJS.WritableStream;
  /** Where a question is written off a terminal (a whole line). */
  readonly log: Output;
}

/**
 * The lines of stdin through `node:readline`, one consumer at a time: while
 * an {@link ask} is pending the next line is its answer; otherwise a line
 * goes to `onLine`, or is kept for the next `ask` when there is no `onLine`
 * (one-shot `--confirm` with answers piped ahead). In terminal mode Ctrl-C
 * arrives as readline's 'SIGINT' event and is passed to `onInterrupt`.
 */
export class LineInput {
  readonly terminal: boolean;
  readonly #rl: Interface;
  readonly #log: Output;
  readonly #echo: NodeJS.WritableStream | undefined;
  readonly #kept: string[] = [];
  #answer: ((line: string | undefined) => void) | undefined;
  #ended = false;
  #muted = false;
  #unresize: (() => void) | undefined;
  /** A line nobody asked for. */
  onLine: ((line: string) => void) | undefined;
  /** Ctrl-C in terminal mode. */
  onInterrupt: (() => void) | undefined;
  /** End of input (Ctrl-D, a closed pipe) or {@link close}. */
  onEnd: (() => void) | undefined;

  constructor(options: LineInputOptions) {
    this.terminal = options.terminal ?? options.input.isTTY === true;
    this.#log = options.log;
    // Echo and prompt on the terminal: stdout, or stderr when stdout goes to a file or a pipe.
    const terminalOut = process.stdout.isTTY ? process.stdout : process.stderr;
    const output = this.terminal ? (options.echo ?? terminalOut) : undefined;
    this.#echo = output;
    const echo = output === undefined ? undefined : this.#mutable(output);
    this.#rl = createInterface({ input: options.input, output: echo, terminal: this.terminal, prompt: '> ' });
    this.#rl.on('line', (line) => this.#line(line));
    this.#rl.on('close', () => {
      this.#unresize?.();
      this.#ended = true;
      this.cancelAsk();
      this.onEnd?.();
    });
    if (this.terminal)
      this.#rl.on('SIGINT', () => {
        if (this.asking) output?.write('\n'); // leave the question's line before the run's stop reason
        this.onInterrupt?.();
      });
  }

  /**
   * While true (a run streams its answer on the terminal), what is typed is
   * not echoed, so it never lands inside the answer; readline still holds
   * it, and the line arrives on Enter. A question ({@link ask}) is echoed
   * anyway. Once unmuted, {@link prompt} shows the prompt with what was
   * typed so far.
   */
  set muted(value: boolean) {
    this.#muted = value;
  }

  /** A readline output that passes writes through to `target` unless muted. */
  #mutable(target: NodeJS.WritableStream): NodeJS.WritableStream {
    const tty = target as NodeJS.WritableStream & { columns?: number; rows?: number; isTTY?: boolean };
    const stream = new Writable({
      write: (chunk: Buffer | string, _encoding, done) => {
        if (!this.#muted || this.asking) target.write(chunk);
        done();
      },
    });
    Object.defineProperties(stream, {
      columns: { get: () => tty.columns },
      rows: { get: () => tty.rows },
      isTTY: { get: () => tty.isTTY },
    });
    const resize = () => stream.emit('resize');
    target.on?.('resize', resize);
    this.#unresize = () => target.off?.('resize', resize);
    return stream;
  }

  /** True once the input ended or was closed. */
  get ended(): boolean {
    return this.#ended;
  }

  /** True while an {@link ask} waits for its answer. */
  get asking(): boolean {
    return this.#answer !== undefined;
  }

  /**
   * Shows `question` (as readline's prompt on a terminal, else as a line on
   * `log`) and resolves with the next line, or `undefined` at the end of
   * input or on {@link cancelAsk}. The question is shown even when its
   * answer is already there (a line typed or piped ahead, or the end of
   * input): on a terminal with that answer after it, as if typed.
   */
  ask(question: string): Promise<string | undefined> {
    this.cancelAsk();
    const kept = this.#kept.shift();
    if (kept !== undefined || this.#ended) {
      if (this.#echo) this.#echo.write(`${question}${kept ?? ''}\n`);
      else this.#log.write(`${question.trimEnd()}\n`);
      return Promise.resolve(kept);
    }
    const answer = new Promise<string | undefined>((resolve) => (this.#answer = resolve));
    if (this.terminal) {
      this.#rl.setPrompt(question); // shown even while muted: a question is being asked
      this.#rl.prompt();
    } else this.#log.write(`${question.trimEnd()}\n`);
    return answer;
  }

  /** Resolves a pending {@link ask} with `undefined` (its run ended). */
  cancelAsk(): void {
    const answer = this.#answer;
    this.#answer = undefined;
    if (this.terminal && !this.#ended) this.#rl.setPrompt('> ');
    answer?.(undefined);
  }

  /** Shows the idle prompt (`> `) on a terminal; nothing off one. */
  prompt(): void {
    if (this.terminal && !this.#ended) this.#rl.prompt();
  }

  /** Closes readline (restoring the terminal's mode); idempotent. */
  close(): void {
    if (!this.#ended) this.#rl.close();
  }

  #line(line: string): void {
    const answer = this.#answer;
    if (answer) {
      this.#answer = undefined;
      if (this.terminal) this.#rl.setPrompt('> ');
      return answer(line);
    }
    if (this.onLine) this.onLine(line);
    else this.#kept.push(line);
  }
}
