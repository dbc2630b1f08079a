import type { RunHandle } from '../engine/types.js';
import type { TerminalEvent } from '../events.js';
import { refusalOf, type RunCommand, type RunCommandResult } from './command.js';

/**
 * A live run as {@link applyRunCommand} reaches it: its handle, whether (and how) it ended, and its thread's
 * steering queue (`localRuns`' thread mailbox, a worker's mirrored mailbox).
 */
export interface CommandTarget {
  readonly handle: Pick<RunHandle, 'cancel' | 'stop' | 'approve' | 'reject' | 'cancelToolCall'>;
  /** The type of the run's terminal event once it was emitted (it is emitted before `cancel()` returns). */
  terminal(): TerminalEvent['type'] | undefined;
  /** Pushes steering `text` (with the steering id `id` when given); returns its steering id. */
  steer(text: string, id: string | undefined): string;
  /** Takes back queued steering by id: true when it will never be delivered. */
  withdraw(steeringId: string): boolean;
}

const NOT_LIVE = (op: 'steer') => ({
  ok: false as const,
  op,
  error: { name: 'RunNotLiveError', code: 'run_not_live', message: 'the run is not live' },
});

/**
 * Runs a parsed command against a live run and answers its typed result; it never throws (what the run
 * throws becomes a refusal). Every `Runs` implementation applies commands with it, so each command means the
 * same everywhere (docs/ui.md, "The Runs interface"):
 * - `cancel`: `cancelled: true` only for the cancel that ended the run (`run_cancelled` emitted before this
 *   returns); `false` when it had ended, or ended otherwise.
 * - `stop`, `decide`, `cancel_tool_call`, `withdraw`: whether it took effect (`false` once the run ended).
 * - `steer`: the steering id, or a `RunNotLiveError` refusal once the run ended.
 */
export function applyRunCommand(target: CommandTarget, command: RunCommand): RunCommandResult {
  try {
    const live = target.terminal() === undefined;
    switch (command.op) {
      case 'cancel': {
        if (!live) return { ok: true, op: 'cancel', cancelled: false };
        target.handle.cancel(command.reason);
        return { ok: true, op: 'cancel', cancelled: target.terminal() === 'run_cancelled' };
      }
      case 'stop': {
        const options =
          command.graceMs === undefined ? { at: command.at } : { at: command.at, graceMs: command.graceMs };
        return { ok: true, op: 'stop', stopped: live && target.handle.stop(options) };
      }
      case 'steer':
        if (!live) return NOT_LIVE('steer');
        return { ok: true, op: 'steer', id: target.steer(command.text, command.id) };
      case 'withdraw':
        return { ok: true, op: 'withdraw', withdrawn: target.withdraw(command.steeringId) };
      case 'decide': {
        const { callId } = command;
        const decide = () =>
          command.approve ? target.handle.approve(callId) : target.handle.reject(callId, command.reason);
        return { ok: true, op: 'decide', decided: live && decide() };
      }
      case 'cancel_tool_call':
        return {
          ok: true,
          op: 'cancel_tool_call',
          cancelled: live && target.handle.cancelToolCall(command.callId, command.reason),
        };
    }
  } catch (error) {
    return { ok: false, op: command.op, error: refusalOf(error) };
  }
}
