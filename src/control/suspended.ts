import { z } from 'zod';
import { ItemSchema, ToolCallSchema, UsageSchema, type Usage } from '../items.js';

/**
 * A decision on a tool call awaiting approval ("approvals", docs/run-control.md): approve it, or reject
 * it with the reason the model reads. The same shape as `Runs.decide`'s `decision`.
 */
export const ToolDecisionSchema = z.union([
  z.object({ approve: z.literal(true) }).readonly(),
  z.object({ approve: z.literal(false), reason: z.string() }).readonly(),
]);
/** See {@link ToolDecisionSchema}. */
export type ApprovalDecision = z.infer<typeof ToolDecisionSchema>;

const SealSchema = z
  .object({
    alg: z.literal('HMAC-SHA256'),
    key: z.string(),
    agent: z.string(),
    calls: z.record(z.string(), z.object({ status: z.enum(['pending', 'decided', 'free']), mac: z.string() })),
    mac: z.string(),
  })
  .readonly();

/**
 * A suspension's usage as read back: a count a provider left out (missing, `null` after JSON, not a
 * number) reads 0 and makes the usage not `reported`; it never makes a suspension unresumable.
 */
function readUsage(value: unknown): unknown {
  if (value === null || typeof value !== 'object') return value;
  const v = value as Record<string, unknown>;
  const count = (x: unknown): number | undefined => (typeof x === 'number' && Number.isFinite(x) ? x : undefined);
  const input = count(v.inputTokens);
  const output = count(v.outputTokens);
  const total = count(v.totalTokens);
  const out: { -readonly [K in keyof Usage]: Usage[K] } = {
    inputTokens: input ?? 0,
    outputTokens: output ?? 0,
    totalTokens: total ?? (input ?? 0) + (output ?? 0),
    reported: v.reported === true && input !== undefined && output !== undefined && total !== undefined,
  };
  const read = count(v.cacheReadTokens);
  const write = count(v.cacheWriteTokens);
  if (read !== undefined) out.cacheReadTokens = read;
  if (write !== undefined) out.cacheWriteTokens = write;
  return out;
}

/**
 * What a run suspended for approval leaves (`run_completed.suspended`, `RunResult.suspended`; the
 * `approvals: 'suspend'` run option). Plain JSON: `JSON.parse(JSON.stringify(s))` resumes the same.
 * - `version`: 1 (a later loopctl that changes the shape raises it; `resume` refuses others).
 * - `suspensionId`: this suspension's id; the resumed run's commit carries it, and a session refuses
 *   a second commit with it ("already resumed").
 * - `runId`, `agent`: the suspended run and its agent's name.
 * - `sessionHead`: the id of the session's last Item when the run loaded it (`result:<callId>` for a
 *   tool result, which has no id); `null` for an empty history or no session.
 * - `turn`: the turn the run suspended in (the resumed run goes on in it).
 * - `items`: the run's new Items so far: its input, the steering it drained, the assistant Items, the
 *   tool results; the last assistant Item's calls are the batch being dispatched, followed by the
 *   results that batch has so far (calls denied, refused or decided before the suspension).
 * - `pending`: the calls awaiting a decision, in call order.
 * - `decisions`: decisions given (through `control`) after a call's `tool_approval_requested` and
 *   before the run suspended; `resume` applies them as given.
 * - `frontend`: the pending calls that are calls to the run's front-end tools (`RunOptions.frontendTools`),
 *   answered with `{ result }` on resume; absent when there is none.
 * - `nested`: for each call of the open batch to an agent used as a tool whose sub-run suspended (a sub-agent's
 *   call awaiting approval, root in suspend mode), that sub-run's suspension (of this shape), by the call's id;
 *   absent when there is none. Its pending calls are answered on resume like the run's own, each under its
 *   path-qualified id (`<callId>/<its callId>`, {@link PendingCall.id}).
 * - `usage`: the usage of the run so far (its own, plus that of the suspensions it was resumed from):
 *   the resumed run's terminal usage starts from it, so the last run of a chain reports the usage of
 *   the whole, as the waiting path does (add up only the last run's, not every run's).
 * - `seal`: its integrity tags (HMAC-SHA256 under `RunOptions.suspensionKey`, or this process's key
 *   without one); `resume` refuses a suspension that does not match it (docs/run-control.md, "Integrity").
 * Steering still queued is never in it: it stays in the mailbox.
 */
export const SuspendedSchema = z
  .object({
    version: z.literal(1),
    suspensionId: z.string(),
    runId: z.string(),
    agent: z.string(),
    sessionHead: z.string().nullable(),
    turn: z.number().int().positive(),
    items: z.array(ItemSchema).readonly(),
    pending: z.array(ToolCallSchema).readonly(),
    decisions: z.record(z.string(), ToolDecisionSchema),
    frontend: z.array(z.string()).readonly().optional(),
    nested: z.record(z.string(), z.unknown()).optional(),
    usage: z.preprocess(readUsage, UsageSchema),
    seal: SealSchema.optional(),
  })
  .readonly();
/** See {@link SuspendedSchema}. */
export type Suspended = z.infer<typeof SuspendedSchema>;

/** A pending call of a suspension, own or of a nested sub-run's, with the agent tools down to it (`[]`: own). */
export interface PendingCall {
  /**
   * The key of its decision in `resume`'s `decisions`, and its AG-UI interrupt's id: `callId` for the run's own
   * call; for a nested sub-run's, the ids of the agent tool calls down to it and its own, joined by `/`
   * (`call_research/call_ops/call_deploy`). Unique among a suspension's pending calls even when sibling sub-runs
   * number their calls alike (`call_0` in each): one decision answers one call.
   */
  readonly id: string;
  readonly callId: string;
  readonly name: string;
  readonly arguments: string;
  readonly path: readonly string[];
}

/** Joins the agent tool call ids down to a nested call and its own id into its {@link PendingCall.id}. */
export const NESTED_CALL_SEPARATOR = '/';

/**
 * Every call a resume of `s` must answer: its own `pending`, then (depth first) those of each nested sub-run's
 * suspension (`nested`), each with its decision key `id` and its `path` (the agent tools from the run down). A
 * nested value that is not a suspension is left out (`resume` refuses it).
 */
export function pendingCalls(s: Suspended, path: readonly string[] = []): PendingCall[] {
  return pendingUnder(s, path, '');
}

function pendingUnder(s: Suspended, path: readonly string[], prefix: string): PendingCall[] {
  const out: PendingCall[] = s.pending.map((c) => ({
    id: prefix + c.callId,
    callId: c.callId,
    name: c.name,
    arguments: c.arguments,
    path,
  }));
  for (const [callId, raw] of Object.entries(s.nested ?? {})) {
    const inner = SuspendedSchema.safeParse(raw);
    if (!inner.success) continue;
    const tool = s.items.flatMap((i) => (i.type === 'assistant' ? i.toolCalls : [])).find((c) => c.callId === callId);
    out.push(...pendingUnder(inner.data, [...path, tool?.name ?? callId], prefix + callId + NESTED_CALL_SEPARATOR));
  }
  return out;
}
