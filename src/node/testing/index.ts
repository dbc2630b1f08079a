/**
 * The `loopctl/node/testing` entry (Node.js only): the contract suite every session store must pass,
 * and the second process its cross-process parts drive; the contract suite every `Runs` implementation
 * must pass (`runsContract`, docs/ui.md) and the agent it drives. It takes the test framework's functions as
 * arguments, so loopctl depends on no test framework. See docs/sessions.md.
 */
export { sessionContract, sessionKillContract, type SessionContractOptions } from './contract.js';
export type { ContractFramework, ContractIt, ContractAssertion, MakeStore, TestBody } from './kit.js';
export { hostileItems } from './kit.js';
export {
  spawnSessionPeer,
  servePeer,
  churnRun,
  type SessionPeer,
  type SpawnPeer,
  type PeerCommand,
  type PeerError,
  type PeerLeaseResult,
} from './peer.js';
export { runsContract } from './contract-runs.js';
export type { MakeRuns, RunsContractOptions, RunsUnderTest } from './runs-kit.js';
export { runsContractAgent, RUNS_CONTRACT_AGENT, type RunsContractDirective } from './runs-agent.js';
