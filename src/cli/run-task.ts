import {
  isResumeError,
  isSessionSchemaError,
  isTerminalEvent,
  resumeRun,
  run,
  type Agent,
  type RunEvent,
  type RunOptions,
  type RunTelemetry,
  type TerminalEvent,
} from '../index.js';
import type { CliOptions } from './args.js';
import { toJsonLine } from './json-line.js';
import type { SelectedModel } from './model.js';
import { TerminalRenderer, type Output } from './render.js';
import { sanitizeLine } from './sanitize.js';
import { cliDeadlines } from './run-options.js';
import { exitCodeFor, type StopSignal } from './signals.js';

/** Where the events of one run go: the human view, and with `--json` the NDJSON lines. */
export interface TaskSinks {
  readonly renderer: TerminalRenderer;
  /** `--json`: one line per event (see `toJsonLine`). */
  readonly json?: Output | undefined;
  /** `--otel`: the run's telemetry. */
  readonly telemetry?: RunTelemetry | undefined;
  /** `--confirm`: told each event after the renderer (it asks about `tool_approval_requested`). */
  readonly watch?: ((event: RunEvent) => void) | undefined;
}

/** Swallows what is written: the answer's place in `--json` mode (the events carry it). */
const NOWHERE: Output = { write: () => true, isTTY: false };

/**
 * The renderer of one CLI run: the answer on `stdout` (nowhere with
 * `--json`: stdout holds only NDJSON then), everything else on `stderr`,
 * waits shown with the run's deadlines, connection errors naming the server, and whether the conversation's
 * completed runs are saved (for the budget stop line).
 */
export function cliRenderer(
  options: CliOptions,
  model: SelectedModel,
  io: { stdout: Output; stderr: Output },
  conversation: { readonly saved: boolean },
): TerminalRenderer {
  return new TerminalRenderer(options.json ? NOWHERE : io.stdout, io.stderr, {
    deadlines: cliDeadlines(options),
    baseURL: model.baseURL,
    saved: conversation.saved,
  });
}

/** The `--json` sink of a CLI run (`stdout`), or undefined without `--json`. */
export function jsonSink(options: CliOptions, io: { stdout: Output }): Output | undefined {
  return options.json ? io.stdout : undefined;
}

/**
 * Runs `task` with `options`, writing each event as a `--json` line first
 * (when asked) and then to the renderer; resolves with the terminal event
 * (the run's Observable never errors: guarantee 1, one terminal event, last).
 */
export function runTask(agent: Agent, task: string, options: RunOptions, sinks: TaskSinks): Promise<TerminalEvent> {
  return new Promise((resolve) => {
    const { telemetry } = sinks;
    run(agent, task, telemetry === undefined ? options : { ...options, telemetry }).subscribe((event) => {
      sinks.json?.write(toJsonLine(event));
      sinks.renderer.on(event);
      sinks.watch?.(event);
      if (isTerminalEvent(event)) resolve(event);
    });
  });
}

/**
 * Continues the run `runId` whose process was killed, from its last journalled turn (`resumeRun`,
 * docs/cli.md "Saved conversations"), with the sinks of `runTask`; resolves with its terminal event, or
 * undefined when it cannot be continued (it was committed or discarded meanwhile: `why` says so). A
 * journal that cannot be read (`SessionSchemaError`: a corrupt row; `ResumeError` `tampered`: a missing
 * turn) is discarded, and `why` says so: the conversation is as it was before that run, and the next
 * `--continue` does not meet it again. Journal rows under a run whose commit is stored (`ResumeError`
 * `committed`) are discarded too, and `why` says so. The error's message is escaped (`sanitizeLine`).
 */
export async function continueTask(
  agent: Agent,
  runId: string,
  options: RunOptions,
  sinks: TaskSinks,
  why: (text: string) => void,
): Promise<TerminalEvent | undefined> {
  const { telemetry } = sinks;
  let handle;
  try {
    handle = await resumeRun(agent, runId, telemetry === undefined ? options : { ...options, telemetry });
  } catch (error) {
    // The message may quote the file (a run id, a row): escaped, so nothing from it reaches the terminal raw.
    const message = sanitizeLine(String((error as Error | undefined)?.message ?? error));
    const discard = options.session?.discardJournal;
    const discarded = (): Promise<boolean> =>
      typeof discard !== 'function'
        ? Promise.resolve(false)
        : Promise.resolve()
            .then(() => discard.call(options.session, runId))
            .then(
              () => true,
              () => false,
            );
    const unreadable = isSessionSchemaError(error) || (isResumeError(error) && error.code === 'tampered');
    if (unreadable && typeof discard === 'function') {
      // A journal that cannot be read (a corrupt row, a missing turn) never will be: discarded, so the next
      // --continue is clean.
      why(
        (await discarded())
          ? `the stopped run's journal could not be read (${message}) and was discarded; ` +
              'the conversation is as it was before that run'
          : `the stopped run's journal could not be read (${message}), nor discarded`,
      );
      return undefined;
    }
    if (isResumeError(error) && error.code === 'committed' && typeof discard === 'function') {
      // Journal rows under a run whose commit is stored (the commit removes them: rows put back later) are
      // never continued: removed (the history stays), else every --continue would meet them again.
      why(
        (await discarded())
          ? 'the stopped run had completed (its commit is stored): its leftover journal was removed'
          : 'the stopped run had completed (its commit is stored): its leftover journal could not be removed',
      );
      return undefined;
    }
    why(`the stopped run cannot be continued: ${message}`);
    return undefined;
  }
  return new Promise((resolve) => {
    handle.events$.subscribe((event) => {
      sinks.json?.write(toJsonLine(event));
      sinks.renderer.on(event);
      sinks.watch?.(event);
      if (isTerminalEvent(event)) resolve(event);
    });
  });
}

/**
 * The exit code of a run that ended with `event`: 0 completed, 1 failed,
 * and for a cancel the code of the stop that caused it (130 SIGINT, 143
 * SIGTERM, 141 closed output; 130 when none is known, e.g. `/cancel`).
 */
export function exitCodeOf(event: TerminalEvent, stoppedBy: StopSignal | undefined): number {
  if (event.type === 'run_completed') return 0;
  if (event.type === 'run_failed') return 1;
  return exitCodeFor(stoppedBy ?? 'SIGINT');
}
