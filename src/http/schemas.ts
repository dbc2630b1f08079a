import { z } from 'zod';

/**
 * The query parameters of the routes (docs/ui.md, "Routes"), validated with zod; a failure is a 400 naming
 * the field. `RunAgentInput` is validated with @ag-ui/core's own schema; the bodies of the run command routes
 * (cancel, stop, steering, decision, tool-call cancel) are run commands, parsed by `parseRunCommand`, the
 * one validator of run commands (a bad field is a 400 naming it).
 */

/** `POST /agents/:agent/runs?ifBusy=…`. */
export const StartQuerySchema = z.object({
  ifBusy: z.enum(['reject', 'enqueue', 'interrupt', 'rollback', 'steer']).optional(),
});

/** `GET /runs/:runId/events?threadId=…[&lastEventId=…]`. */
export const EventsQuerySchema = z.object({ threadId: z.string().min(1), lastEventId: z.string().optional() });
