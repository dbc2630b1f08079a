import type { Observable } from 'rxjs';
import type { Approvals } from '../control/approvals.js';
import type { RunEvent } from '../events.js';
import type { Tool, ToolContext } from '../tools/tool.js';
import type { Suspended } from '../control/suspended.js';
import type { ResumeState, RunWrap } from './internals.js';
import type { RunOptions } from './types.js';

/** Internal: the run a sub-run (an agent used as a tool) reports to (guarantee 12: sub-runs on a child token). */
export interface ParentRun {
  /** Relays one of the sub-run's events (a nested sub-run's with its `path` below this tool) as `subrun_event`. */
  relay(path: readonly string[], event: RunEvent): void;
  /** The parent's time, id and jitter sources and its telemetry, inherited by the sub-run unless it sets its own. */
  readonly inherited: Pick<RunOptions<unknown>, 'scheduler' | 'idGenerator' | 'random' | 'telemetry'>;
  /**
   * Links the sub-run's approvals to the parent's root run, so a sub-run's call awaiting approval is decided
   * (or cancelled) through the root run's `RunControl` (the sub-run does not inherit the `control` option).
   */
  adoptApprovals(approvals: Approvals): () => void;
  /** True when the root run suspends for approval (`approvals: 'suspend'` on it): a sub-run suspends too. */
  readonly rootSuspends: boolean;
  /** Told the sub-run's suspension (it suspended for approval): the parent suspends after its batch. */
  suspended(suspended: Suspended): void;
  /** For a call of a resumed batch whose sub-run suspended: what the sub-run resumes from. */
  readonly resume: ResumeState | undefined;
  /** The parent's context propagation, inherited by the sub-run. */
  readonly wrap: RunWrap | undefined;
}

/** Internal: runs one call of an agent-as-tool: the sub-run's final output, its events relayed to `parent`. */
export type SubAgentRun = (args: unknown, ctx: ToolContext<any>, parent: ParentRun | undefined) => Observable<string>;

const subAgents = new WeakMap<Tool, SubAgentRun>();

/** Internal: marks `tool` (made by `agent.asTool()`) as a sub-agent: a run calls `run` with itself as parent. */
export function registerSubAgent(tool: Tool, run: SubAgentRun): void {
  subAgents.set(tool, run);
}

/** Internal: the sub-run of a tool made by `agent.asTool()`, or undefined for any other tool. */
export function subAgentOf(tool: Tool): SubAgentRun | undefined {
  return subAgents.get(tool);
}
