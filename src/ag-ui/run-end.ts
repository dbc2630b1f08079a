import { EventType, type AGUIEvent, type TokenUsage } from '@ag-ui/core';
import { describeValue, toJsonText } from '../describe.js';
import { pendingCalls } from '../control/suspended.js';
import type { TerminalEvent } from '../events.js';
import type { Usage } from '../items.js';
import { LOOPCTL_EVENTS } from './names.js';

/**
 * The AG-UI events that end a run's stream for its terminal event (docs/ui.md, "Event mapping"), after the
 * mapper closed what was open: `RUN_FINISHED` (outcome `success`, `cancelled` after `loopctl.cancelled`, or
 * `interrupt` after `loopctl.suspended`) or `RUN_ERROR`. Isomorphic.
 */
export function runEnd(event: TerminalEvent, threadId: string, base: { timestamp?: number }): AGUIEvent[] {
  const out: AGUIEvent[] = [];
  const run = { threadId, runId: event.runId };
  const usage = tokenUsage(event.usage);
  if (event.type === 'run_completed' && event.suspended !== undefined) {
    // Suspended for approval: AG-UI's interrupt outcome, the suspension as its payload.
    const value = { suspended: event.suspended };
    out.push({ type: EventType.CUSTOM, ...base, name: LOOPCTL_EVENTS.suspended, value });
    // A front-end tool's call is answered with its result (docs/ui.md, "Front-end tools"), not approved.
    const frontend = new Set(event.suspended.frontend ?? []);
    // A nested sub-run's pending call (root in suspend mode) carries its `path`; its approval request named it. Its
    // interrupt id is its path-qualified decision key (`<agent tool callId>/<callId>`): sibling sub-runs may number
    // their calls alike, and one resume entry answers one call.
    const interrupts = pendingCalls(event.suspended).map((c) =>
      c.path.length > 0
        ? {
            id: c.id,
            reason: 'tool_approval',
            metadata: { name: c.name, arguments: c.arguments, path: c.path, callId: c.callId },
          }
        : {
            id: c.callId,
            reason: frontend.has(c.callId) ? 'frontend_tool' : 'tool_approval',
            toolCallId: c.callId,
            metadata: { name: c.name, arguments: c.arguments },
          },
    );
    out.push({ type: EventType.RUN_FINISHED, ...base, ...run, outcome: { type: 'interrupt', interrupts }, ...usage });
  } else if (event.type === 'run_completed') {
    const result = {
      output: event.output,
      ...('value' in event ? { value: jsonValue(event.value) } : {}),
      finishReason: event.finishReason,
      undelivered: event.undelivered,
      // a graceful stop reached its boundary; a limit of the run's budget was reached (with its figures)
      ...(event.stopReason === 'stopped' ? { stopReason: 'stopped' } : {}),
      ...(event.stopReason === 'budget' ? { stopReason: 'budget', budget: event.budget } : {}),
      ...(event.cost !== undefined ? { cost: event.cost } : {}),
    };
    out.push({ type: EventType.RUN_FINISHED, ...base, ...run, result, outcome: { type: 'success' }, ...usage });
  } else if (event.type === 'run_cancelled') {
    // "cancelled is not failed" (guarantee 4): AG-UI's own cancelled outcome, not RUN_ERROR.
    const value = {
      phase: event.phase,
      reason: describeValue(event.reason, 'reason'),
      undelivered: event.undelivered,
    };
    out.push({ type: EventType.CUSTOM, ...base, name: LOOPCTL_EVENTS.cancelled, value });
    out.push({ type: EventType.RUN_FINISHED, ...base, ...run, outcome: { type: 'cancelled' }, ...usage });
  } else {
    out.push({
      type: EventType.RUN_ERROR,
      ...base,
      message: describeValue(event.error.message),
      code: event.stopReason,
      ...usage,
    });
  }
  return out;
}

/** A foreign value as plain JSON data (the encoder stringifies it): its JSON text parsed back, else its description. */
export function jsonValue(value: unknown): unknown {
  if (value === undefined) return null;
  const json = toJsonText(value);
  return json.ok ? JSON.parse(json.text) : describeValue(value);
}

/** The run's usage as AG-UI's per-model list (one entry: loopctl sums every model of the run). */
function tokenUsage(usage: Usage): { usage?: TokenUsage[] } {
  const { inputTokens, outputTokens, totalTokens } = usage;
  if (![inputTokens, outputTokens, totalTokens].every(Number.isSafeInteger)) return {};
  return { usage: [{ inputTokens, outputTokens, totalTokens }] };
}
