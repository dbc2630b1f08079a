import { z } from 'zod';
import { DurationMsSchema } from '../duration.js';
import { ConfigurationError } from '../errors.js';

/**
 * The run commands (docs/ui.md, "The Runs interface"): what a caller asks of a live run, as one protocol that
 * JavaScript callers (`Runs` methods), HTTP bodies (`loopctl/http`) and queue messages (`loopctl/bullmq`) all
 * speak. Each is a JSON object with `op`:
 * - `cancel { reason? }`: hard cancel; `reason` any value (JSON across processes).
 * - `stop { at?, graceMs? }`: graceful stop at `'turn_end'` (default) or `'tool_call_end'`; `graceMs` an integer
 *   number of ms from 0 to 2³¹−1 (`MAX_DURATION_MS`), then the run is cancelled (`stop_timeout`).
 * - `steer { text, id? }`: steering text; `id` the steering id to give it (default a new UUID).
 * - `withdraw { steeringId }`: takes back queued steering.
 * - `decide { callId, approve, reason? }`: approves (`approve: true`, no `reason`) or rejects (`approve:
 *   false`, `reason` the model reads) a call awaiting approval.
 * - `cancel_tool_call { callId, reason? }`: cancels one running call or one awaiting approval.
 * Unknown keys are refused (a misspelt `gracems` would otherwise be a stop without a grace).
 */
export const RunCommandSchema = z.discriminatedUnion('op', [
  z.strictObject({ op: z.literal('cancel'), reason: z.unknown().optional() }),
  z.strictObject({
    op: z.literal('stop'),
    at: z.enum(['turn_end', 'tool_call_end'], { error: "must be 'turn_end' or 'tool_call_end'" }).optional(),
    graceMs: DurationMsSchema.optional(),
  }),
  z.strictObject({ op: z.literal('steer'), text: z.string({ error: 'must be a string' }), id: nonEmpty().optional() }),
  z.strictObject({ op: z.literal('withdraw'), steeringId: nonEmpty() }),
  z
    .strictObject({
      op: z.literal('decide'),
      callId: nonEmpty(),
      approve: z.boolean({ error: 'must be true or false' }),
      reason: z.string({ error: 'must be a string' }).optional(),
    })
    .superRefine((d, ctx) => {
      if (d.approve === false && d.reason === undefined) {
        ctx.addIssue({ code: 'custom', path: ['reason'], message: 'must be a string (a rejection has a reason)' });
      }
      if (d.approve === true && d.reason !== undefined) {
        ctx.addIssue({ code: 'custom', path: ['reason'], message: 'is only for a rejection (approve: false)' });
      }
    }),
  z.strictObject({ op: z.literal('cancel_tool_call'), callId: nonEmpty(), reason: z.unknown().optional() }),
]);

function nonEmpty() {
  return z.string({ error: 'must be a non-empty string' }).min(1, { error: 'must be a non-empty string' });
}

/** The name of a run command (its `op`). */
export type RunOp = 'cancel' | 'stop' | 'steer' | 'withdraw' | 'decide' | 'cancel_tool_call';

/** A parsed run command (see {@link RunCommandSchema}). */
export type RunCommand =
  | { readonly op: 'cancel'; readonly reason?: unknown }
  | { readonly op: 'stop'; readonly at?: 'turn_end' | 'tool_call_end'; readonly graceMs?: number }
  | { readonly op: 'steer'; readonly text: string; readonly id?: string }
  | { readonly op: 'withdraw'; readonly steeringId: string }
  | { readonly op: 'decide'; readonly callId: string; readonly approve: true }
  | { readonly op: 'decide'; readonly callId: string; readonly approve: false; readonly reason: string }
  | { readonly op: 'cancel_tool_call'; readonly callId: string; readonly reason?: unknown };

/** The run command with `op` `O`. */
export type RunCommandOf<O extends RunOp> = Extract<RunCommand, { op: O }>;

/**
 * What a command answers (its typed result; `ok: false` a refusal that names why). The answer fields are
 * the HTTP routes' JSON bodies: `{ cancelled }`, `{ stopped }`, `{ id }`, `{ withdrawn }`, `{ decided }`.
 */
export type RunCommandResult =
  | { readonly ok: true; readonly op: 'cancel'; readonly cancelled: boolean }
  | { readonly ok: true; readonly op: 'stop'; readonly stopped: boolean }
  | { readonly ok: true; readonly op: 'steer'; readonly id: string }
  | { readonly ok: true; readonly op: 'withdraw'; readonly withdrawn: boolean }
  | { readonly ok: true; readonly op: 'decide'; readonly decided: boolean }
  | { readonly ok: true; readonly op: 'cancel_tool_call'; readonly cancelled: boolean }
  | { readonly ok: false; readonly op: RunOp | undefined; readonly error: CommandRefusal };

/**
 * Why a command was refused, as plain JSON (it crosses processes): the error's `name` (`ConfigurationError`
 * with its `field`, `RunNotLiveError`, …), its `message`, and its `code` when it has one.
 */
export interface CommandRefusal {
  readonly name: string;
  readonly message: string;
  readonly field?: string;
  readonly code?: string;
}

/**
 * The only validator of run commands: `value` as a {@link RunCommand}, or a `ConfigurationError` naming the
 * first bad field (`graceMs`, `callId`, `reason`, an unknown key, `op`; `command` when it is no object).
 * A value that cannot be read (a revoked Proxy) is refused too; it never throws anything else.
 * @throws {ConfigurationError} naming the field.
 */
export function parseRunCommand(value: unknown): RunCommand {
  let result: ReturnType<typeof RunCommandSchema.safeParse>;
  try {
    if (value === null || typeof value !== 'object' || Array.isArray(value)) {
      throw new ConfigurationError('command', 'must be an object with an op');
    }
    result = RunCommandSchema.safeParse(value);
  } catch (error) {
    if (error instanceof ConfigurationError) throw error;
    throw new ConfigurationError('command', 'cannot be read (a getter or Proxy trap threw)');
  }
  if (result.success) return withoutUndefined(result.data) as RunCommand;
  const issue = result.error.issues[0]!;
  if (issue.code === 'unrecognized_keys') {
    const op = (value as { op?: unknown }).op;
    throw new ConfigurationError(issue.keys[0] ?? 'command', `is not a field of a ${String(op)} command`);
  }
  const field = issue.path.length === 0 ? 'command' : issue.path.map(String).join('.');
  if (field === 'op') throw new ConfigurationError('op', `must be one of ${OPS.join(', ')}`);
  throw new ConfigurationError(field, issue.message);
}

/** Every `op`, in the order of the docs' table. */
export const OPS: readonly RunOp[] = ['cancel', 'stop', 'steer', 'withdraw', 'decide', 'cancel_tool_call'];

/** The command without its `undefined` fields (`{ at: 'turn_end', graceMs: undefined }`: a stop without a grace). */
function withoutUndefined(command: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(command)) if (v !== undefined) out[key] = v;
  return out;
}

/**
 * `{ op, ...fields }` parsed: the shape a `Runs` method builds from its arguments (`stop(runId, opts)` is
 * `commandOf('stop', opts)`). `fields` must be an object (or undefined); `name` names it in the error.
 * @throws {ConfigurationError} naming the field.
 */
export function commandOf<O extends RunOp>(op: O, fields: unknown, name = 'options'): RunCommandOf<O> {
  if (fields !== undefined && (fields === null || typeof fields !== 'object' || Array.isArray(fields))) {
    throw new ConfigurationError(name, 'must be an object');
  }
  let copy: Record<string, unknown>;
  try {
    copy = { ...(fields as object | undefined) };
  } catch {
    throw new ConfigurationError(name, 'cannot be read (a getter or Proxy trap threw)');
  }
  if ('op' in copy) throw new ConfigurationError('op', 'is given by the method or route, not in its fields');
  return parseRunCommand({ ...copy, op }) as RunCommandOf<O>;
}

/** A refusal describing `error` (a `ConfigurationError` keeps its `field`, a typed error its `code`). */
export function refusalOf(error: unknown): CommandRefusal {
  const e = (error !== null && typeof error === 'object' ? error : {}) as Record<string, unknown>;
  const name = typeof e['name'] === 'string' ? e['name'] : 'Error';
  const message = typeof e['message'] === 'string' ? e['message'] : String(error);
  return {
    name,
    message,
    ...(typeof e['field'] === 'string' ? { field: e['field'] } : {}),
    ...(typeof e['code'] === 'string' ? { code: e['code'] } : {}),
  };
}
