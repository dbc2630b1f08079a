import { CancelSignal } from '../index.js';
import { budgetOption } from './prices.js';
import type { CliOptions } from './args.js';
import { cliAgent, header } from './agent.js';
import { approvalOptions, askApproval, confirmApprovals, isYes } from './confirm.js';
import { LineInput, type LineSource } from './line-input.js';
import type { SelectedModel } from './model.js';
import type { LoadModule } from './otel.js';
import type { Output } from './render.js';
import type { RunTelemetry } from '../index.js';
import { runDeadlines } from './run-options.js';
import { cliRenderer, continueTask, exitCodeOf, jsonSink, runTask } from './run-task.js';
import { exitCodeFor, trapStopSignals, type StopSignal, type StopSignals } from './signals.js';
import { ConversationBusyError, type Conversation } from './store/conversation.js';
import { isInstance } from '../describe.js';

/** Where the CLI reads and writes, and how it exits at once (a second Ctrl-C). */
export interface CliIO {
  readonly stdout: Output;
  readonly stderr: Output;
  /** Lines for `--interactive`, piped tasks and `--confirm` answers (default `process.stdin`). */
  readonly stdin?: LineSource;
  /** Ends the process at once with `code` (the bin removes temp files, then re-raises 130 and 143 as signals). */
  readonly exit: (code: number) => never;
  /**
   * The process's stops (SIGINT, SIGTERM, a closed output), trapped since
   * start-up by the bin; without it, each run traps SIGINT and SIGTERM itself.
   */
  readonly stops?: StopSignals;
  /** `--otel`: the telemetry of every run (set by `main`). */
  readonly telemetry?: RunTelemetry;
  /** How `--otel` loads the optional OpenTelemetry packages (default `import()`; tests give their own). */
  readonly loadModule?: LoadModule;
}

/**
 * Runs one agent on `options.task` with `model`, rendering to `io`, and
 * resolves with the exit code: 0 completed, 1 failed, 130 cancelled by
 * SIGINT, 143 by SIGTERM, 141 by a closed output (see `StopSignal`). The
 * first stop cancels the run through a CancelSignal (the stop reason is
 * printed before this resolves); a second one calls `io.exit` at once. stdin
 * is not read for tasks; with `--confirm`, writes and shell commands are
 * asked about on stdin (opened at the first question; the end of input
 * refuses). The run continues `conversation` and, when it completes, commits
 * to it; while another loopctl runs on it, nothing starts and the code is 1.
 */
export async function runAgent(
  options: CliOptions,
  model: SelectedModel,
  io: CliIO,
  conversation: Conversation,
): Promise<number> {
  const agent = cliAgent(options, model);
  const renderer = cliRenderer(options, model, io, conversation);

  const cancel = new CancelSignal();
  let stoppedBy: StopSignal | undefined;
  const untrap = trapStopSignals(
    (signal) => {
      stoppedBy = signal;
      cancel.cancel(signal);
    },
    (signal) => {
      io.stderr.write(`\n[loopctl] second ${signal}: exiting now\n`);
      io.exit(exitCodeFor(signal));
    },
    io.stops,
  );
  let input: LineInput | undefined;
  const answers = (): LineInput => {
    if (input) return input;
    input = new LineInput({ input: io.stdin ?? process.stdin, log: io.stderr });
    input.onInterrupt = () => untrap.raise('SIGINT'); // Ctrl-C while readline holds the terminal
    return input;
  };
  const confirm = options.confirm
    ? confirmApprovals(async (call) => isYes(await askApproval(call, answers(), (l) => renderer.line(l))))
    : undefined;
  renderer.note(header(agent, options, model));
  renderer.note(conversation.note);
  try {
    const { session } = conversation;
    const runOptions = {
      cancel,
      session,
      ...approvalOptions(runDeadlines(options), confirm),
      ...budgetOption(options, model),
    };
    const sinks = { renderer, json: jsonSink(options, io), telemetry: io.telemetry, watch: confirm?.watch };
    const body = async () => {
      // A run of this conversation killed before it ended (`kill -9`) is continued first, from its last completed
      // turn (its `run_resumed` says so); the task runs once it has completed.
      const unfinished = conversation.unfinishedRun;
      if (unfinished !== undefined) {
        // Said once the lease is held: a loopctl still live on the conversation refuses this one first.
        renderer.note('its last run stopped before it ended and is continued first');
        const ended = await continueTask(agent, unfinished, runOptions, sinks, (text) => renderer.note(text));
        if (ended !== undefined && ended.type !== 'run_completed') return ended;
      }
      return runTask(agent, options.task, runOptions, sinks);
    };
    const outcome = await conversation.hold(
      (reason) => cancel.cancel(reason),
      body,
      cancel.signal, // Ctrl-C while the store's lock is waited for ends the wait
    );
    // A new conversation is stored by its first completed run: the header's "resumes it" did not come true.
    if (conversation.notCreated !== undefined && outcome.type !== 'run_completed') {
      renderer.note(conversation.notCreated);
    }
    return exitCodeOf(outcome, stoppedBy);
  } catch (error) {
    if (!isInstance(error, ConversationBusyError)) throw error;
    renderer.line(`loopctl: ${(error as Error).message}`);
    return 1;
  } finally {
    renderer.dispose();
    input?.close();
    untrap();
  }
}
