/**
 * The `loopctl/node/testing` entry (Node.js only): the contract suite every session store must pass,
 * and the second process its cross-process parts drive (docs/sessions.md); the contract suite every `Runs`
 * implementation must pass (`runsContract`, docs/ui.md) and the agent it drives; the contract suite every
 * model provider must pass, its local wire server, the kits of the OpenAI adapters and the wires of
 * Anthropic and Gemini (no SDK loaded)
 * (docs/testing.md, "Proving a provider adapter"). The suites take the test framework's functions as
 * arguments, so loopctl depends on no test framework.
 */
export { sessionContract, sessionKillContract, type SessionContractOptions } from './contract.js';
export type { TamperHooks } from './contract-tamper.js';
export type { ContractFramework, ContractIt, ContractAssertion, MakeStore, TestBody } from './kit.js';
export { hostileItems, providerPartItems } from './kit.js';
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
export { providerContract } from './provider-contract.js';
export type {
  ProviderKit,
  WireKit,
  WireTarget,
  WireRequest,
  WireReply,
  WireStream,
  WireErrorSpec,
  ScriptedAnswer,
  ScriptedToolCall,
} from './provider-kit.js';
export { startWireServer, type WireServer, type WireRecord, type WireScript } from './wire-server.js';
export { openaiChatKit, openaiChatWire } from './provider-kits/openai-chat.js';
export { openaiResponsesKit, openaiResponsesWire } from './provider-kits/openai-responses.js';
export { geminiWire } from './provider-kits/gemini.js';
export { geminiContentsFault, geminiRequestFault, kitSignature } from './provider-kits/gemini-validate.js';
export { runsContract } from './contract-runs.js';
export type { MakeRuns, RunsContractOptions, RunsUnderTest } from './runs-kit.js';
export { runsContractAgent, RUNS_CONTRACT_AGENT, type RunsContractDirective } from './runs-agent.js';
export { anthropicWire } from './provider-kits/anthropic.js';
export {
  anthropicMessagesFault,
  anthropicInvalidVariants,
  anthropicKitSignature,
  kitThinkingLedger,
  type ThinkingLedger,
} from './provider-kits/anthropic-validate.js';
