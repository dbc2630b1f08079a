import { defineAgent, type Agent, type CompactionPolicy, type Guardrails, type Tool } from '../index.js';
import { fsTools, shellTool } from '../node/index.js';
import type { CliOptions } from './args.js';
import { withApprovals } from './confirm.js';
import type { SelectedModel } from './model.js';
import { sanitizeLine } from './sanitize.js';

/**
 * The tools of a CLI run: the workspace tools of `loopctl/node`, and `run_shell` only with `--allow-shell`;
 * with `--confirm`, writes and shell commands need approval.
 */
export function cliTools(options: CliOptions): Tool[] {
  const tools: Tool[] = fsTools(options.cwd, { readOnly: options.readOnly });
  if (options.allowShell) tools.push(shellTool(options.cwd));
  return options.confirm ? withApprovals(tools) : tools;
}

/** The agent's instructions for the folder `cwd`. */
export function instructions(options: CliOptions): string {
  return [
    `You are loopctl, an assistant working on the files of the folder ${options.cwd}.`,
    'Look at the files with the tools before you answer; paths are relative to that folder and cannot leave it.',
    options.readOnly ? 'This run is read-only: you cannot write files.' : 'Write files only when the task asks for it.',
    options.allowShell ? 'run_shell runs a shell command in the folder; prefer the file tools when they suffice.' : '',
    options.confirm
      ? 'The user approves each write and shell command; a refused call comes back as a tool error: do ' +
        'not retry it, say what you would have done.'
      : '',
    'Answer concisely, in plain text.',
  ]
    .filter(Boolean)
    .join(' ');
}

/** The CLI's compaction policy: the library's defaults (a summary past 80 % of the window, the latest 2 turns kept). */
export const CLI_COMPACTION: CompactionPolicy = Object.freeze({});

/** The `loopctl` agent of a CLI session (one-shot or interactive); `name` for another (serve's asking one). */
export function cliAgent(options: CliOptions, model: SelectedModel, name = 'loopctl'): Agent {
  return defineAgent({
    name,
    instructions: instructions(options),
    model: model.provider,
    tools: cliTools(options),
    maxTurns: options.maxTurns,
    // Long conversations are compacted past 80 % of the window (docs/long-runs.md), unless --no-compact.
    ...(options.compact ? { compaction: CLI_COMPACTION } : {}),
    ...(options.contextWindow !== undefined ? { contextWindow: options.contextWindow } : {}),
    ...(options.guard !== undefined ? { guardrails: patternGuardrails(options.guard) } : {}),
  });
}

/**
 * `--guard <pattern>` (docs/guardrails.md, "The CLI"): an input guardrail checked before the request (no tokens
 * spent on a refused task) and a `'hold'` output guardrail (no sentence of a refused answer is shown), both named
 * `guard`, tripping on a match of `pattern`.
 */
export function patternGuardrails(pattern: RegExp): Guardrails {
  const check = (subject: { readonly text: string }) => {
    const match = pattern.exec(subject.text);
    return match === null ? { tripwire: false } : { tripwire: true, output: { matched: match[0] } };
  };
  return { input: [{ name: 'guard', mode: 'before', check }], output: [{ name: 'guard', mode: 'hold', check }] };
}

/** The header line: the model, the folder and the tools. */
export function header(agent: Agent, options: CliOptions, model: SelectedModel): string {
  const confirm = options.confirm ? ' · --confirm: writes and shell commands ask first' : '';
  const tools = agent.tools.map((t) => t.name).join(', ');
  return sanitizeLine(`${model.label} · folder ${options.cwd} · tools: ${tools}${confirm}`);
}
