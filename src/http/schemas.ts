import { z } from 'zod';

/**
 * The request bodies and query parameters of the routes (docs/ui.md, "Routes"), validated with zod; a
 * failure is a 400 naming the field. `RunAgentInput` is validated with @ag-ui/core's own schema.
 */

/** `POST /runs/:runId/cancel`: `reason` any JSON value (the default reason when absent). */
export const CancelBodySchema = z.object({ reason: z.unknown().optional() }).strict();

/** `POST /runs/:runId/stop`. */
export const StopBodySchema = z
  .object({ at: z.enum(['turn_end', 'tool_call_end']), graceMs: z.number().int().nonnegative().optional() })
  .strict();

/** `POST /runs/:runId/steering`. */
export const SteerBodySchema = z.object({ text: z.string() }).strict();

/** `POST /runs/:runId/tool-calls/:callId/decision`. */
export const DecisionBodySchema = z.discriminatedUnion('approve', [
  z.object({ approve: z.literal(true) }).strict(),
  z.object({ approve: z.literal(false), reason: z.string() }).strict(),
]);

/** `POST /agents/:agent/runs?ifBusy=…`. */
export const StartQuerySchema = z.object({
  ifBusy: z.enum(['reject', 'enqueue', 'interrupt', 'rollback', 'steer']).optional(),
});

/** `GET /runs/:runId/events?threadId=…[&lastEventId=…]`. */
export const EventsQuerySchema = z.object({ threadId: z.string().min(1), lastEventId: z.string().optional() });
