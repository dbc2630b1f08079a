import { Observable } from 'rxjs';
import { ConfigurationError } from '../errors.js';
import type { RunEvent } from '../events.js';
import type { Item } from '../items.js';
import type { MailboxToken } from '../mailbox/mailbox.js';
import type { RunInternals } from './internals.js';
import { runLoop$ } from './loop.js';
import { RunController } from './run-controller.js';
import { openTelemetry } from './telemetry-hooks.js';
import type { Agent, RunOptions } from './types.js';
import { validateRunArgs } from './validate.js';
import { withFrontendTools } from '../tools/frontend-tool.js';

/** `queuedBefore` of a run whose mailbox was empty when it started (never written). */
const NOTHING_QUEUED: ReadonlySet<MailboxToken> = new Set();

/**
 * Internal to the package (not exported): the one entry behind `run()`, `start()` and
 * `agent.asTool()`. Validates the input and options (a `ConfigurationError` naming the field,
 * before anything runs) and returns the run as a cold Observable: each subscription is one run, a
 * {@link RunController} and its loop. `internals` is what only the package passes: a token the run
 * owns, how it settled, and context propagation (`wrap`, see {@link RunInternals}); the `telemetry`
 * run option is opened per run into `wrap` and `tap`. `agent` must come from `defineAgent`.
 */
export function createRun<C>(
  agent: Agent<C>,
  input: string | readonly Item[],
  options: RunOptions<C>,
  internals: RunInternals = {},
): Observable<RunEvent> {
  const items = validateRunArgs(input, options);
  // The run's front-end tools are offered with the agent's own (docs/run-control.md, "Front-end tools").
  const front = options.frontendTools;
  if (front !== undefined && front.length > 0) {
    if (internals.parent !== undefined) throw new ConfigurationError('options.frontendTools', 'a sub-run has none');
    agent = Object.freeze({ ...agent, tools: withFrontendTools(agent.tools, front) });
  }
  return new Observable<RunEvent>((subscriber) => {
    const { telemetry } = options;
    // Opened per run, so the run's internals are its own then (each run's telemetry watches it only).
    const own = telemetry === undefined ? internals : { ...internals };
    const rc = new RunController<C>(agent, options, own, subscriber, items);
    if (telemetry !== undefined) {
      const { runId, mailbox } = rc;
      const { name, model } = agent;
      const parent = own.parent ? { parent: own.parent } : {};
      const trace = options.trace !== undefined ? { trace: options.trace } : {};
      const run = { runId, agent: name, model: model.id, input, mailbox, ...parent, ...trace };
      openTelemetry(telemetry, run, own);
    }
    // "Arrival order": what is queued now was queued before this run started (a push from a
    // run_started handler comes after). A busy mailbox fails the run before anything is drained.
    const queuedBefore: ReadonlySet<MailboxToken> = rc.mailbox.size === 0 ? NOTHING_QUEUED : new Set(rc.mailbox.peek());
    const begin = (): void => rc.start((c) => runLoop$(c, queuedBefore));
    const wrap = own.wrap?.run;
    if (wrap !== undefined) wrap({ runId: rc.runId, agent: agent.name }, begin);
    else begin();
    return rc;
  });
}
