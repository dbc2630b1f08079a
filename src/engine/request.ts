import { toJsonSchema } from '../tools/tool.js';
import type { Item } from '../items.js';
import type { ModelRequest, ToolSpec } from '../model/types.js';
import { applySummaries } from './compaction/apply.js';
import { attemptDeadlines } from './deadlines.js';
import { outputSpec } from './output.js';
import type { RunContext } from './run-context.js';
import type { Agent } from './types.js';

const specs = new WeakMap<Agent<any>, readonly ToolSpec[]>();

/** The wire form of an agent's tools, computed once per agent (an agent is frozen). */
export function toolSpecs(agent: Agent<any>): readonly ToolSpec[] {
  let out = specs.get(agent);
  if (!out) {
    const spec = (t: Agent<any>['tools'][number]): ToolSpec =>
      Object.freeze({ name: t.name, description: t.description, parameters: toJsonSchema(t.parameters) });
    out = Object.freeze(agent.tools.map(spec));
    specs.set(agent, out);
  }
  return out;
}

/**
 * A turn's model request: the instructions, the loaded history followed by the run's Items so far (with their
 * summaries applied: docs/long-runs.md, "Compaction"),
 * the tools, and whether and how long of the primary model's default kind (each attempt sets its own);
 * for an agent with `output`, its `OutputSpec`.
 */
export function buildRequest(rc: RunContext<any>, history: readonly Item[]): ModelRequest {
  const stream = rc.opts.stream ?? rc.agent.model.stream ?? true;
  const timeoutMs = attemptDeadlines(rc.opts.deadlines, stream).requestMs;
  const items = rc.totals.scratch.items;
  const request: ModelRequest = {
    stream,
    instructions: rc.agent.instructions,
    // Summaries applied (docs/long-runs.md, "Compaction"): the Items they cover left out, each sent as a user message.
    items: applySummaries(history.length === 0 ? items.slice() : history.concat(items)),
    tools: toolSpecs(rc.agent),
  };
  const output = outputSpec(rc.agent);
  if (output !== undefined) Object.assign(request, { output });
  return timeoutMs === undefined ? request : Object.assign(request, { timeoutMs });
}
