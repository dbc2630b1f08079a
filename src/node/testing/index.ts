/**
 * The `loopctl/node/testing` entry (Node.js only): the contract suite every session store must pass,
 * and the second process its cross-process parts drive. It takes the test framework's functions as
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
