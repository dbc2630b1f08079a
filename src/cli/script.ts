import { createInterface } from 'node:readline';
import { budgetOption } from './prices.js';
import { CancelSignal } from '../index.js';
import { isInstance } from '../describe.js';
import type { CliOptions } from './args.js';
import { cliAgent, header } from './agent.js';
import type { SelectedModel } from './model.js';
import { runDeadlines } from './run-options.js';
import type { CliIO } from './run-agent.js';
import { cliRenderer, exitCodeOf, jsonSink, runTask } from './run-task.js';
import { sanitizeLine } from './sanitize.js';
import { exitCodeFor, trapStopSignals, type StopSignal } from './signals.js';
import { ConversationBusyError, type Conversation } from './store/conversation.js';

/** The message and exit code (2) of piped input that held no task. */
export const NO_TASK = 'no task: give one as an argument, or pipe one task per line on stdin (see --help)';

/**
 * Piped tasks (stdin is not a terminal and no task was given): each
 * non-empty line of stdin is a task, run in order on `conversation` (each
 * run sees the completed runs before it; each completed run commits). Lines are
 * never steering: steering is for a person typing. A failed line does not
 * stop the later ones, nor does one refused because another loopctl runs on
 * the conversation (its code is 1). The header (the model, the conversation) is written before the first task;
 * stdin that holds none gets only the no-task line. Resolves with the exit code of the last run (0, 1,
 * 130, 141, 143), or 2 when stdin held no task. The first SIGINT or SIGTERM
 * cancels the live run and ends the session: no further line is started,
 * and the code is the signal's; a second one exits at once (`io.exit`).
 */
export async function runScript(
  options: CliOptions,
  model: SelectedModel,
  io: CliIO,
  conversation: Conversation,
): Promise<number> {
  const agent = cliAgent(options, model);
  const { session } = conversation;
  const lines = createInterface({ input: io.stdin ?? process.stdin, terminal: false, crlfDelay: Infinity });
  let live: CancelSignal | undefined;
  let stoppedBy: StopSignal | undefined;
  const untrap = trapStopSignals(
    (signal) => {
      stoppedBy = signal;
      live?.cancel(signal);
      lines.close(); // no further line is started
    },
    (signal) => {
      io.stderr.write(`\n[loopctl] second ${signal}: exiting now\n`);
      io.exit(exitCodeFor(signal));
    },
    io.stops,
  );
  // The header names the conversation, so it waits for the first task: stdin with none creates no conversation,
  // and says only that there is no task (exit 2).
  const announce = (): void => {
    io.stderr.write(`[loopctl] ${header(agent, options, model)} · tasks from stdin, one per line\n`);
    io.stderr.write(`[loopctl] ${conversation.note}\n`);
  };
  let code: number | undefined;
  let n = 0;
  try {
    for await (const raw of lines) {
      const task = raw.trim();
      if (stoppedBy !== undefined) break;
      if (task === '') continue;
      if (n++ === 0) announce();
      const renderer = cliRenderer(options, model, io, conversation);
      renderer.note(`task ${n}: ${sanitizeLine(task)}`);
      const cancel = (live = new CancelSignal());
      const runOptions = { cancel, session, deadlines: runDeadlines(options), ...budgetOption(options, model) };
      const sinks = { renderer, json: jsonSink(options, io), telemetry: io.telemetry };
      try {
        const outcome = await conversation.hold(
          (reason) => cancel.cancel(reason),
          () => runTask(agent, task, runOptions, sinks),
          cancel.signal,
        );
        code = exitCodeOf(outcome, stoppedBy);
      } catch (error) {
        if (!isInstance(error, ConversationBusyError)) throw error;
        renderer.line(`loopctl: ${(error as Error).message}`);
        code = 1;
      }
      renderer.dispose();
      live = undefined;
      if (stoppedBy !== undefined) break;
    }
  } finally {
    lines.close();
    untrap();
  }
  if (stoppedBy !== undefined) return exitCodeFor(stoppedBy);
  if (code === undefined) {
    io.stderr.write(`loopctl: ${NO_TASK}\n`);
    return 2;
  }
  return code;
}
