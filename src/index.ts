/**
 * loopctl: LLM agent loops as RxJS Observables, with cooperative cancellation
 * that lands at a clean boundary and live steering through a mailbox.
 * This is the isomorphic core (no `node:*` imports). See README.md and docs/.
 */
export { CancelSignal, DEFAULT_CANCEL_REASON, type CancelListener } from './cancel/cancel-signal.js';
export { takeUntilCancelled, untilCancelled, cancellableTimer, stage, hopThenPoll } from './cancel/operators.js';
export { Mailbox, type MailboxToken, type MailboxOptions } from './mailbox/mailbox.js';
export * from './items.js';
export * from './events.js';
export * from './errors.js';
export { DEFAULTS } from './defaults.js';
export { UNREADABLE_REASON } from './cancel/abort-reason.js';
export { describeValue, toJsonText, type JsonTextResult } from './describe.js';
export type { ModelProvider, ModelRequest, ModelResponse, ModelEvent, ToolSpec, JsonSchema } from './model/types.js';
export { openaiChat, openaiResponses, type OpenAIChatOptions, type OpenAIResponsesOptions, type OpenAIProviderOptions } from './model/openai/index.js';
export { tool, toJsonSchema, type Tool, type ToolContext, type ToolReturn } from './tools/tool.js';
export type { Session, MaybeAsync, AppendOptions } from './session/session.js';
export { MemorySession } from './session/memory-session.js';
export { commitPartial, type EndedRun } from './session/commit-partial.js';
export { defineAgent } from './engine/define-agent.js';
export { run } from './engine/run.js';
export { start } from './engine/start.js';
export { DEADLINE_REASON } from './engine/link-cancel.js';
export type {
  Agent, AgentDefinition, Hooks, HookContext, HookReturn, RunOptions, RunResult, RunHandle,
  RetryOptions, Deadlines, BreakerOptions,
} from './engine/types.js';
export { mcpTools, type McpToolsOptions, type McpCallOptions } from './mcp/index.js';
export { agentAsTool } from './engine/as-tool.js';
export type { AsToolOptions, SubRunOptions } from './engine/types.js';
