import { RunControl, type Deadlines, type RunEvent, type Tool, type ToolCall } from '../index.js';
import type { LineInput } from './line-input.js';
import { sanitizeLine } from './sanitize.js';
import { argsLine } from '../wording.js';

/** The tools `--confirm` asks about: they change files or run commands. */
export const NEEDS_APPROVAL: ReadonlySet<string> = new Set(['write_file', 'run_shell']);

/** The reason a refused call is rejected with; the model gets it as a tool error (`ToolCallRejectedError`). */
export const REFUSED = 'refused by the user';

/** The question after the `[confirm]` line. */
export const QUESTION = 'allow? [y/N] ';

/** `--confirm`: the tools in {@link NEEDS_APPROVAL} need approval (`needsApproval: true`); the others are as given. */
export function withApprovals(tools: readonly Tool[]): Tool[] {
  return tools.map((t) => (NEEDS_APPROVAL.has(t.name) ? { ...t, needsApproval: true } : t));
}

/** What a run needs for `--confirm`: its `control`, and `watch`, told each of its events. */
export interface ConfirmApprovals {
  readonly control: RunControl;
  watch(event: RunEvent): void;
}

/**
 * `--confirm` on tool approvals (docs/run-control.md, "Approvals"): each `tool_approval_requested` of
 * the run is asked with `approve(call)`, one question at a time in the order the calls came; a yes
 * approves the call, anything else rejects it with {@link REFUSED} (the call is not run, the model
 * gets `ToolCallRejectedError`). The run waits at the `approval` checkpoint meanwhile (give it
 * `approvalMs: false`: the user takes their time), so a Ctrl-C while the question is open cancels the run.
 */
export function confirmApprovals(approve: (call: ToolCall) => Promise<boolean>): ConfirmApprovals {
  const control = new RunControl();
  let asked: Promise<unknown> = Promise.resolve();
  return {
    control,
    watch(event) {
      if (event.type !== 'tool_approval_requested') return;
      const call = { callId: event.callId, name: event.name, arguments: event.arguments };
      asked = asked.then(async () => {
        const yes = await approve(call).catch(() => false);
        if (yes) control.approve(call.callId);
        else control.reject(call.callId, REFUSED);
      });
    },
  };
}

/**
 * The run options of `--confirm` around `deadlines`: its `control`, and no approval deadline (the
 * question waits for the user). Without `--confirm`, just the deadlines.
 */
export function approvalOptions(
  deadlines: Deadlines,
  confirm: ConfirmApprovals | undefined,
): { deadlines: Deadlines; control?: RunControl } {
  if (confirm === undefined) return { deadlines };
  return { deadlines: { ...deadlines, approvalMs: false }, control: confirm.control };
}

/** `y` or `yes`, any case: anything else (an empty line, the end of input) refuses. */
export function isYes(answer: string | undefined): boolean {
  return /^\s*y(es)?\s*$/i.test(answer ?? '');
}

/**
 * Shows the call (`[confirm] write_file path: a.md, content: …` through `say`, which
 * ends the answer's line first) and asks {@link QUESTION} on `input`;
 * resolves with the raw answer (`undefined` at the end of input or when the
 * run ended meanwhile).
 */
export function askApproval(
  call: ToolCall,
  input: LineInput,
  say: (line: string) => void,
): Promise<string | undefined> {
  // The arguments in words (`path: x.txt, content: …`), as the `[tool]` line and the page show them.
  say(`[confirm] ${sanitizeLine(call.name)} ${clip(sanitizeLine(argsLine(call.arguments, 400)), 400)}`);
  return input.ask(QUESTION);
}

function clip(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}
