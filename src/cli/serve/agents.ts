import type { Agent } from '../../index.js';
import { cliAgent } from '../agent.js';
import type { CliOptions } from '../args.js';
import { NEEDS_APPROVAL } from '../confirm.js';
import type { SelectedModel } from '../model.js';

/**
 * The name of the agent that `loopctl serve` (without `--confirm`) also offers: the same model and tools, its
 * `write_file` and `run_shell` calls asking for Approve/Reject in the page first. The page's setting "Ask before
 * writes and shell commands" starts runs of it.
 */
export const ASKING_AGENT = 'loopctl-ask';

/** The agents of `loopctl serve`, by name, and which one the page starts by default. */
export interface ServeAgents {
  /** The agent the page starts when its setting does not ask for more (`loopctl`; it asks with `--confirm`). */
  readonly main: Agent;
  /** {@link ASKING_AGENT}: absent with `--confirm` (the main agent asks already) and when no tool could ask. */
  readonly asking?: Agent;
}

/**
 * The agents a served page may start. The page can only make runs stricter than the command line, never
 * looser: without `--confirm` it chooses between the plain agent and {@link ASKING_AGENT}; with `--confirm`
 * the only agent asks, so no request can start a run whose writes or shell commands do not ask. With no tool
 * that would ask (`--read-only`), there is no asking agent.
 */
export function serveAgents(options: CliOptions, model: SelectedModel): ServeAgents {
  const main = cliAgent(options, model);
  if (options.confirm || !main.tools.some((t) => NEEDS_APPROVAL.has(t.name))) return { main };
  return { main, asking: cliAgent({ ...options, confirm: true }, model, ASKING_AGENT) };
}
