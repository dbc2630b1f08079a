import { commandOf, type CommandRefusal, type RunCommand, type RunCommandResult } from '../control/command.js';
import { ConfigurationError, LoopctlError } from '../errors.js';
import { NotSupportedError, RunNotLiveError } from './errors.js';
import type { Runs } from './types.js';

/**
 * How a `Runs` implementation sends one parsed command to a run of `principal`: it resolves with the
 * command's result (as `applyRunCommand` answered it where the run lives), or rejects with
 * `RunNotFoundError` (no such run for this principal) or a transport error (`MailboxUnavailableError`).
 */
export type SendCommand = (runId: string, command: RunCommand, principal: string) => Promise<RunCommandResult>;

/** A result that is no refusal. */
type Answered = Exclude<RunCommandResult, { ok: false }>;

/** The command methods of {@link Runs}: every one a thin wrapper of one `send`. */
export type RunsCommandMethods = Pick<Runs, 'cancel' | 'stop' | 'steer' | 'withdraw' | 'decide' | 'cancelToolCall'>;

/**
 * The command methods of a `Runs` built on one `send` (`localRuns`, `queueRuns`; a third implementation may
 * use it too): each builds its command from its arguments with `parseRunCommand` (a bad field rejects with
 * `ConfigurationError` naming it, before the run is looked up), sends it, and turns a refusal back into its
 * typed error.
 */
export function commandMethods(send: SendCommand): RunsCommandMethods {
  const call = async (runId: string, build: () => RunCommand, principal: string): Promise<Answered> => {
    const command = build();
    const result = await send(runId, command, principal);
    if (!result.ok) throw refusalError(result.error, runId);
    return result;
  };
  return {
    async cancel(runId, reason, principal) {
      const r = await call(runId, () => commandOf('cancel', reason === undefined ? {} : { reason }), principal);
      return r.op === 'cancel' && r.cancelled;
    },
    async stop(runId, opts, principal) {
      const r = await call(runId, () => commandOf('stop', opts), principal);
      return r.op === 'stop' && r.stopped;
    },
    async steer(runId, text, principal) {
      const r = await call(runId, () => commandOf('steer', { text }), principal);
      if (r.op !== 'steer') throw new Error('a steer command answered something else');
      return { id: r.id };
    },
    async withdraw(runId, steeringId, principal) {
      const r = await call(runId, () => commandOf('withdraw', { steeringId }), principal);
      return r.op === 'withdraw' && r.withdrawn;
    },
    async decide(runId, callId, decision, principal) {
      const r = await call(runId, () => commandOf('decide', decisionFields(callId, decision)), principal);
      return r.op === 'decide' && r.decided;
    },
    async cancelToolCall(runId, callId, reason, principal) {
      const fields = reason === undefined ? { callId } : { callId, reason };
      const r = await call(runId, () => commandOf('cancel_tool_call', fields), principal);
      return r.op === 'cancel_tool_call' && r.cancelled;
    },
  };
}

/** `decide`'s decision with its call id, as the fields of a decide command (`decision` an object). */
function decisionFields(callId: unknown, decision: unknown): Record<string, unknown> {
  if (decision === null || typeof decision !== 'object') {
    throw new ConfigurationError('approve', 'must be { approve: true } or { approve: false, reason }');
  }
  return { ...decision, callId };
}

/**
 * The typed error a refusal stands for: `ConfigurationError` (with its field), `RunNotLiveError`,
 * `NotSupportedError`, or a `LoopctlError` with the refusal's name and message.
 */
export function refusalError(refusal: CommandRefusal, runId: string): Error {
  const { name, message, field } = refusal;
  if (name === 'ConfigurationError' && field !== undefined) {
    return new ConfigurationError(field, message.startsWith(`${field}: `) ? message.slice(field.length + 2) : message);
  }
  if (name === 'RunNotLiveError') return new RunNotLiveError(runId);
  if (name === 'NotSupportedError' && field !== undefined) {
    return new NotSupportedError(field, message.startsWith(`${field}: `) ? message.slice(field.length + 2) : message);
  }
  const error = new LoopctlError(message);
  Object.defineProperty(error, 'name', { value: name });
  return error;
}
