import { CancelSignal, describeValue, Mailbox, type Agent, type Session, type TerminalEvent } from '../index.js';
import { budgetOption } from './prices.js';
import { isInstance } from '../describe.js';
import type { CliOptions } from './args.js';
import { cliAgent, header } from './agent.js';
import { approvalOptions, askApproval, confirmApprovals, isYes, type ConfirmApprovals } from './confirm.js';
import { LineInput } from './line-input.js';
import type { SelectedModel } from './model.js';
import type { TerminalRenderer } from './render.js';
import type { CliIO } from './run-agent.js';
import { runDeadlines } from './run-options.js';
import { cliRenderer, jsonSink, runTask } from './run-task.js';
import { sanitizeLine } from './sanitize.js';
import { exitCodeFor, onStopSignals } from './signals.js';
import { ConversationBusyError, type Conversation } from './store/conversation.js';

/** Two Ctrl-C within this many ms exit (130). */
export const DOUBLE_INTERRUPT_MS = 2000;

const HINT =
  'interactive: type a task and press Enter. While it runs, a line steers it; /cancel stops it, ' +
  '/quit exits, /help lists the commands. Ctrl-C cancels the run (twice within 2 s exits).';
/** The commands of the prompt loop, in the order `/help` and a refused command list them. */
export const COMMANDS: readonly string[] = ['/cancel', '/drop', '/quit', '/exit', '/help'];

/** A line that looks like a command: a slash and one word (`/quti`); `/etc/hosts: what is it?` is a task. */
const COMMAND_LIKE = /^\/[a-z][\w-]*$/i;

const HELP_LINES = [
  'a line         starts a run (idle) or steers the live run (queued, injected at its next turn)',
  '/cancel        cancels the live run (so does Ctrl-C); the conversation keeps only completed runs (each is saved)',
  '/drop          forgets steering kept from an ended run',
  '/quit, /exit   exits 0 (cancelling the live run first); so does Ctrl-D once the run ends (Ctrl-C then: 130)',
];

/** The run going on: its own token (so a Ctrl-C cancels this run and no other) and its renderer. */
interface LiveRun {
  readonly cancel: CancelSignal;
  readonly renderer: TerminalRenderer;
}

/**
 * `loopctl --interactive` (or no task on a TTY): a prompt loop on one
 * conversation, resolving with the exit code (0 after /quit or the end of
 * input, 130 after two Ctrl-C within 2 s or a Ctrl-C after the end of input,
 * 143 on SIGTERM, 141 when the output is closed). See {@link InteractiveLoop}.
 */
export function runInteractive(
  options: CliOptions,
  model: SelectedModel,
  io: CliIO,
  conversation: Conversation,
): Promise<number> {
  return new InteractiveLoop(options, model, io, conversation).done;
}

/**
 * One conversation (the `Conversation` the options chose: only completed runs commit to it) and
 * one `Mailbox` reused by every run, so steering a run did not take (its
 * terminal event's `undelivered`, still queued) is drained first by the
 * next run. Lines come from {@link LineInput}: idle, a line starts a run;
 * during a run, it is pushed to the mailbox (`[queued]`, then `[injected]`
 * when a turn takes it); while a `--confirm` question is open, it is the
 * answer. Ctrl-C (readline's 'SIGINT' on a terminal, the process signal
 * otherwise) cancels the live run through its own CancelSignal.
 */
export class InteractiveLoop {
  readonly done: Promise<number>;
  readonly #io: CliIO;
  readonly #agent: Agent;
  readonly #options: CliOptions;
  readonly #model: SelectedModel;
  readonly #conversation: Conversation;
  readonly #mailbox = new Mailbox();
  readonly #input: LineInput;
  readonly #confirm: ConfirmApprovals | undefined;
  readonly #untrap: () => void;
  #resolve!: (code: number) => void;
  #live: LiveRun | undefined;
  #lastInterrupt = -Infinity;
  #inputEnded = false;
  #quitting = false;

  constructor(options: CliOptions, model: SelectedModel, io: CliIO, conversation: Conversation) {
    this.done = new Promise((resolve) => (this.#resolve = resolve));
    this.#io = io;
    this.#conversation = conversation;
    this.#options = options;
    this.#model = model;
    this.#agent = cliAgent(options, model);
    this.#confirm = options.confirm ? confirmApprovals((call) => this.#approve(call)) : undefined;
    this.#untrap = onStopSignals(
      (signal) => (signal === 'SIGINT' ? this.#interrupt() : this.#quit(exitCodeFor(signal), signal)),
      io.stops,
    );
    this.#input = new LineInput({ input: io.stdin ?? process.stdin, log: io.stderr });
    this.#input.onLine = (line) => this.#onLine(line);
    this.#input.onInterrupt = () => this.#interrupt();
    this.#input.onEnd = () => {
      this.#inputEnded = true;
      if (!this.#live) this.#quit(0, 'end of input');
      else if (!this.#quitting) this.#say('[loopctl] end of input: exiting when this run ends');
    };
    this.#say(`[loopctl] ${header(this.#agent, options, model)}`);
    this.#say(`[loopctl] ${conversation.note}`);
    this.#say(`[loopctl] ${HINT}`);
    if (options.task !== '') this.#startRun(options.task);
    else this.#input.prompt();
  }

  /** The conversation so far (completed runs only). */
  get session(): Session {
    return this.#conversation.session;
  }

  #onLine(raw: string): void {
    const line = raw.trim();
    if (this.#quitting) return;
    if (line === '') return void (this.#live ? undefined : this.#input.prompt());
    if (this.#command(line)) return;
    if (this.#live) {
      this.#mailbox.push(line);
      this.#live.renderer.notice(`[queued] ${sanitizeLine(line)}`); // never inside a streamed line
    } else this.#startRun(line);
  }

  /** Runs `line` when it is a command; false when it is text. */
  #command(line: string): boolean {
    switch (line) {
      case '/quit':
      case '/exit':
        this.#quit(0, '/quit');
        return true;
      case '/cancel':
        if (this.#live) this.#live.cancel.cancel('/cancel');
        else this.#idle('[loopctl] no run to cancel');
        return true;
      case '/drop': {
        const dropped = this.#mailbox.peek().filter((token) => this.#mailbox.remove(token)).length;
        this.#idle(`[loopctl] dropped ${dropped} kept steering message${dropped === 1 ? '' : 's'}`);
        return true;
      }
      case '/help':
        for (const text of HELP_LINES) this.#say(text);
        if (!this.#live) this.#input.prompt();
        return true;
      default: {
        const word = line.split(/\s/, 1)[0]!;
        if (!COMMAND_LIKE.test(word)) return false;
        const known = COMMANDS.join(', ');
        this.#idle(`[loopctl] unknown command ${sanitizeLine(word)}: the commands are ${known} (/help explains them)`);
        return true;
      }
    }
  }

  #startRun(task: string): void {
    const live: LiveRun = {
      cancel: new CancelSignal(),
      renderer: cliRenderer(this.#options, this.#model, this.#io, this.#conversation),
    };
    this.#live = live;
    this.#input.muted = true; // typed input never lands inside the streamed answer
    const options = {
      cancel: live.cancel,
      mailbox: this.#mailbox,
      session: this.#conversation.session,
      ...approvalOptions(runDeadlines(this.#options), this.#confirm),
      ...budgetOption(this.#options, this.#model),
    };
    const { telemetry } = this.#io;
    const json = jsonSink(this.#options, this.#io);
    const sinks = { renderer: live.renderer, json, telemetry, watch: this.#confirm?.watch };
    void this.#conversation
      .hold(
        (reason) => live.cancel.cancel(reason),
        () => runTask(this.#agent, task, options, sinks),
        live.cancel.signal,
      )
      .then(
        (event) => this.#runEnded(live, event),
        (error: unknown) => this.#refused(live, error),
      );
  }

  /** The run did not start: another loopctl runs on the conversation (anything else is a bug: it is described). */
  #refused(live: LiveRun, error: unknown): void {
    const busy = isInstance(error, ConversationBusyError);
    const why = busy ? (error as Error).message : `internal error: ${sanitizeLine(describeValue(error, 'error'))}`;
    live.renderer.line(`loopctl: ${why}`);
    this.#runEnded(live, undefined);
  }

  #runEnded(live: LiveRun, event: TerminalEvent | undefined): void {
    // Still queued in the mailbox: the next run drains them first.
    for (const item of event?.undelivered ?? []) {
      live.renderer.line(`[kept for next run] ${sanitizeLine(item.content)}`);
    }
    live.renderer.dispose();
    if (this.#live === live) this.#live = undefined;
    this.#input.cancelAsk();
    this.#input.muted = false;
    if (this.#quitting) return;
    if (this.#inputEnded) return this.#quit(0, 'end of input');
    this.#input.prompt();
  }

  /** `--confirm`: the question is answered by the next line; `/cancel` or `/quit` as the answer refuses and does it. */
  async #approve(call: Parameters<typeof askApproval>[0]): Promise<boolean> {
    const answer = (await askApproval(call, this.#input, (line) => this.#say(line)))?.trim();
    if (answer === '/cancel' || answer === '/quit' || answer === '/exit') {
      this.#command(answer);
      return false;
    }
    return isYes(answer);
  }

  /**
   * Ctrl-C: cancels the live run (the prompt comes back); idle, cancels nothing; twice within 2 s, exits 130.
   * After the end of input (Ctrl-D) no prompt comes back: Ctrl-C cancels the live run and exits 130, as it
   * does in a one-shot run.
   */
  #interrupt(): void {
    if (this.#inputEnded) return this.#quit(130, 'SIGINT'); // the live run's stop line is printed first
    const now = performance.now();
    const twice = now - this.#lastInterrupt < DOUBLE_INTERRUPT_MS;
    this.#lastInterrupt = now;
    if (twice) {
      this.#say('[loopctl] second Ctrl-C: exiting');
      this.#quit(130, 'SIGINT'); // the live run's stop line is printed before cancel() returns
      return void this.#io.exit(130); // at once, even while a thread is blocked
    }
    if (this.#live) this.#live.cancel.cancel('SIGINT');
    else this.#idle('[loopctl] no run to cancel: /quit or Ctrl-D exits (or Ctrl-C again within 2 s)');
  }

  /** Exits with `code`: cancels the live run first (its stop reason is printed), then closes the input. */
  #quit(code: number, reason: string): void {
    if (this.#quitting) return;
    this.#quitting = true;
    this.#live?.cancel.cancel(reason);
    this.#input.close();
    this.#untrap();
    this.#resolve(code);
  }

  /** A whole line on stderr: through the live run's renderer (it ends the answer's line), else directly. */
  #say(text: string): void {
    if (this.#live) this.#live.renderer.line(text);
    else this.#io.stderr.write(`${this.#input?.terminal && this.#io.stderr.isTTY ? '\r\x1b[K' : ''}${text}\n`);
  }

  /** A line when idle, then the prompt again. */
  #idle(text: string): void {
    this.#say(text);
    if (!this.#live) this.#input.prompt();
  }
}
