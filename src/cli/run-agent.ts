import { CancelSignal, defineAgent, isTerminalEvent, run, type TerminalEvent, type Tool } from '../index.js';
import { fsTools, shellTool } from '../node/index.js';
import type { CliOptions } from './args.js';
import type { SelectedModel } from './model.js';
import { TerminalRenderer, type Output } from './render.js';
import { exitCodeFor, trapStopSignals, type StopSignal } from './signals.js';

/** Where the CLI writes, and how it exits at once (a second Ctrl-C). */
export interface CliIO {
  readonly stdout: Output;
  readonly stderr: Output;
  readonly exit: (code: number) => never;
}

/** The tools of a CLI run: the workspace tools of `loopctl/node`, and `run_shell` only with `--allow-shell`. */
export function cliTools(options: CliOptions): Tool[] {
  const tools: Tool[] = fsTools(options.cwd, { readOnly: options.readOnly });
  if (options.allowShell) tools.push(shellTool(options.cwd));
  return tools;
}

/** The agent's instructions for the folder `cwd`. */
export function instructions(options: CliOptions): string {
  return [
    `You are loopctl, an assistant working on the files of the folder ${options.cwd}.`,
    'Look at the files with the tools before you answer; paths are relative to that folder and cannot leave it.',
    options.readOnly ? 'This run is read-only: you cannot write files.' : 'Write files only when the task asks for it.',
    options.allowShell ? 'run_shell runs a shell command in the folder; prefer the file tools when they suffice.' : '',
    'Answer concisely, in plain text.',
  ]
    .filter(Boolean)
    .join(' ');
}

/**
 * Runs one agent on `options.task` with `model`, rendering to `io`, and
 * resolves with the exit code: 0 completed, 1 failed, 130 cancelled by
 * SIGINT, 143 by SIGTERM. The first SIGINT/SIGTERM cancels the run through a
 * CancelSignal (the stop reason is printed before this resolves); a second
 * one calls `io.exit` at once.
 */
export async function runAgent(options: CliOptions, model: SelectedModel, io: CliIO): Promise<number> {
  const tools = cliTools(options);
  const agent = defineAgent({ name: 'loopctl', instructions: instructions(options), model: model.provider, tools, maxTurns: options.maxTurns });
  const renderer = new TerminalRenderer(io.stdout, io.stderr);
  renderer.note(`${model.label} · folder ${options.cwd} · tools: ${tools.map((t) => t.name).join(', ')}`);

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
  );
  try {
    const outcome = await new Promise<TerminalEvent>((resolve) => {
      run(agent, options.task, { cancel }).subscribe((event) => {
        renderer.on(event);
        if (isTerminalEvent(event)) resolve(event);
      });
    });
    if (outcome.type === 'run_completed') return 0;
    if (outcome.type === 'run_failed') return 1;
    return exitCodeFor(stoppedBy ?? 'SIGINT');
  } finally {
    renderer.dispose();
    untrap();
  }
}
