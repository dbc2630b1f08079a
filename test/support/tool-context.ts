import { CancelSignal, Mailbox, type ToolContext } from '../../src/index.js';

/** A ToolContext for calling a tool's `execute` directly, outside a run. */
export function fakeToolContext(signal: AbortSignal = new AbortController().signal): ToolContext {
  return {
    signal,
    callId: 'c1',
    runId: 'r1',
    turn: 1,
    attempt: 1,
    context: undefined,
    cancel: new CancelSignal(),
    mailbox: new Mailbox(),
    reportProgress() {},
  };
}
