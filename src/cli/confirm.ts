import type { Hooks, ToolCall } from '../index.js';
import type { LineInput } from './line-input.js';
import { sanitizeLine } from './sanitize.js';

/** The tools `--confirm` asks about: they change files or run commands. */
export const NEEDS_APPROVAL: ReadonlySet<string> = new Set(['write_file', 'run_shell']);

/** The deny reason of a refused call; the model gets it as a tool error. */
export const REFUSED = 'refused by the user';

/** The question after the `[confirm]` line. */
export const QUESTION = 'allow? [y/N] ';

/**
 * The `beforeToolCall` hook of `--confirm`: a call of a tool in
 * {@link NEEDS_APPROVAL} waits for `approve(call)`; a refusal returns
 * `{ deny: 'refused by the user' }` (the call is not run, the model gets a
 * tool error). Other calls pass. The hook is a Promise, so the engine races
 * it against cancel: a Ctrl-C while the question is open cancels the run.
 */
export function confirmHooks(approve: (call: ToolCall) => Promise<boolean>): Hooks {
  return {
    beforeToolCall: async ({ call }) => {
      if (!NEEDS_APPROVAL.has(call.name)) return undefined;
      return (await approve(call)) ? undefined : { deny: REFUSED };
    },
  };
}

/** `y` or `yes`, any case: anything else (an empty line, the end of input) refuses. */
export function isYes(answer: string | undefined): boolean {
  return /^\s*y(es)?\s*$/i.test(answer ?? '');
}

/**
 * Shows the call (`[confirm] write_file {"path":…}` through `say`, which
 * ends the answer's line first) and asks {@link QUESTION} on `input`;
 * resolves with the raw answer (`undefined` at the end of input or when the
 * run ended meanwhile).
 */
export function askApproval(call: ToolCall, input: LineInput, say: (line: string) => void): Promise<string | undefined> {
  say(`[confirm] ${sanitizeLine(call.name)} ${clip(sanitizeLine(call.arguments), 400)}`);
  return input.ask(QUESTION);
}

function clip(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}
