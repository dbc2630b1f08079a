import { ToolDecisionSchema, type ApprovalDecision } from '../control/suspended.js';
import { ConfigurationError } from '../errors.js';

/**
 * Checks `Runs.decide`'s arguments, shared by every `Runs` (docs/ui.md, "Approvals"): the call id a non-empty
 * string, the decision `{ approve: true }` or `{ approve: false, reason }`. Returns the decision parsed.
 * @throws {ConfigurationError} naming `callId`, `approve` or `reason`.
 */
export function checkDecision(callId: unknown, decision: unknown): ApprovalDecision {
  if (typeof callId !== 'string' || callId === '') {
    throw new ConfigurationError('callId', 'must be a non-empty string');
  }
  const parsed = ToolDecisionSchema.safeParse(decision);
  if (!parsed.success) {
    const approve = (decision as { approve?: unknown } | null)?.approve;
    const rule = 'must be { approve: true } or { approve: false, reason }';
    throw new ConfigurationError(approve === false ? 'reason' : 'approve', rule);
  }
  return parsed.data;
}
