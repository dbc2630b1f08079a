/**
 * loopctl: LLM agent loops as RxJS Observables, with cooperative cancellation
 * that lands at a clean boundary and live steering through a mailbox.
 * This is the isomorphic core (no `node:*` imports). See README.md and docs/.
 * Every name is listed on purpose; `loopctl/operators` has the cancel-aware
 * operators, `loopctl/testing` the test helpers, `loopctl/node` the Node tools.
 */

// Running agents
export { defineAgent } from './engine/define-agent.js';
export { run } from './engine/run.js';
export { start } from './engine/start.js';
export type {
  Agent,
  AgentDefinition,
  AsToolOptions,
  SubRunOptions,
  Hooks,
  HookContext,
  HookReturn,
  PrepareRequestContext,
  RequestChanges,
  RunOptions,
  RunResult,
  RunHandle,
  RetryOptions,
  Deadlines,
  BreakerOptions,
  StartOptions,
  ReplayMode,
} from './engine/types.js';
export { sliceAfterSeq } from './engine/replay.js';
export type {
  RunTelemetry,
  TelemetryRun,
  RunObserver,
  TelemetryAttempt,
  TelemetryMcpRequest,
} from './engine/telemetry.js';
export { DEFAULTS } from './defaults.js';

// Long runs: budgets, token accounting, context windows (docs/long-runs.md)
export type { Budget, ModelPrice, PriceTable } from './engine/budget/options.js';
export { costOf, type RequestEstimate } from './engine/budget/meter.js';
export { CHARS_PER_TOKEN, InputCalibration, estimateInputTokens, type EstimatedRequest } from './tokens/estimate.js';
export { TOKENIZER_MODULES, loadTokenizer, type TokenCounter } from './tokens/tokenizer.js';
export { CONTEXT_WINDOWS, contextWindowOf } from './tokens/context-windows.js';
export { familyOf, modelName, type ProviderFamily } from './tokens/family.js';
export {
  COMPACTION_DEFAULTS,
  COMPACTION_INSTRUCTIONS,
  COMPACTION_REQUEST,
  type CompactionPolicy,
  type SummaryCompaction,
  type TruncateCompaction,
} from './engine/compaction/policy.js';
export { SUMMARY_PREFIX, applySummaries, summaryMessage } from './engine/compaction/apply.js';
export { isContextLengthError } from './engine/compaction/context-length.js';
export {
  DEFAULT_GUARDRAIL_REFUSAL,
  DEFAULT_GUARDRAIL_TIMEOUT_MS,
  type Guardrails,
  type GuardrailBase,
  type GuardrailContext,
  type GuardrailReturn,
  type GuardrailVerdict,
  type InputGuardrail,
  type InputSubject,
  type OutputGuardrail,
  type OutputSubject,
  type ToolGuardrail,
  type ToolSubject,
} from './guardrails/types.js';
export { GuardrailTrippedError, isGuardrailTrippedError } from './guardrails/error.js';
export { agentGuardrail, type AgentGuardrailOptions } from './guardrails/agent.js';

// Run control: graceful stop, per-call cancel, approvals (docs/run-control.md)
export { RunControl } from './control/run-control.js';
export { stopTimeoutReason, type RunStopOptions } from './control/stop.js';
export { resume } from './engine/resume.js';
export { resumeRun } from './engine/resume-run.js';
export { SuspendedSchema, ToolDecisionSchema, type Suspended, type ApprovalDecision } from './control/suspended.js';
export { pendingCalls, type PendingCall } from './control/suspended.js';
export { FrontendToolResultSchema, type FrontendTool, type FrontendToolResult } from './tools/frontend-tool.js';
export {
  RunCommandSchema,
  parseRunCommand,
  type RunCommand,
  type RunCommandOf,
  type RunCommandResult,
  type CommandRefusal,
  type RunOp,
} from './control/command.js';
export { applyRunCommand, type CommandTarget } from './control/apply.js';
export { MAX_DURATION_MS } from './duration.js';

// Cancelling and steering
export { CancelSignal, DEFAULT_CANCEL_REASON, type CancelListener } from './cancel/cancel-signal.js';
export { UNREADABLE_REASON } from './cancel/abort-reason.js';
export { DEADLINE_REASON } from './engine/link-cancel.js';
export { Mailbox, type MailboxToken, type MailboxOptions } from './mailbox/mailbox.js';

// Tools and models
export {
  tool,
  type Tool,
  type ToolContext,
  type ToolReturn,
  type NeedsApproval,
  type ApprovalContext,
} from './tools/tool.js';
export type {
  ModelProvider,
  ModelRequest,
  ModelResponse,
  ModelEvent,
  ToolSpec,
  ProviderOptions,
  JsonSchema,
  OutputSpec,
} from './model/types.js';
export {
  openaiChat,
  openaiResponses,
  type OpenAIChatOptions,
  type OpenAIResponsesOptions,
  type OpenAIProviderOptions,
  type StructuredOutputsMode,
} from './model/openai/index.js';
export { mcpTools, type McpToolsOptions, type McpCallOptions } from './mcp/index.js';

// Sessions
export type {
  Session,
  MaybeAsync,
  AppendOptions,
  Lease,
  LeaseOptions,
  SessionStore,
  SessionInfo,
  JournalOptions,
  CallStartOptions,
  JournalTurn,
  RunJournal,
} from './session/session.js';
export { MemorySession, type MemorySessionOptions } from './session/memory-session.js';
export { MemorySessionStore } from './session/memory-store.js';
export {
  SessionSchemaError,
  SessionStorageError,
  SessionNotFoundError,
  SessionExistsError,
  JournalFencedError,
  isSessionSchemaError,
  isSessionStorageError,
  isSessionNotFoundError,
  isSessionExistsError,
  isJournalFencedError,
  type SessionSchemaProblem,
} from './session/errors.js';
export { commitPartial, type EndedRun } from './session/commit-partial.js';

// Items and usage
export {
  ItemSchema,
  UserItemSchema,
  AssistantItemSchema,
  ToolResultItemSchema,
  SummaryItemSchema,
  ToolCallSchema,
  UsageSchema,
  TokenCountsSchema,
  ProviderPartsSchema,
  ZERO_USAGE,
  addUsage,
  type Item,
  type UserItem,
  type AssistantItem,
  type ToolResultItem,
  type SummaryItem,
  type ToolCall,
  type Usage,
  type TokenCounts,
  type ProviderParts,
} from './items.js';

// Events
export {
  RunEventSchema,
  CancelPhaseSchema,
  StopReasonSchema,
  FinishReasonSchema,
  UndeliveredSchema,
  SerializedErrorSchema,
  RunStartedSchema,
  RunResumedSchema,
  TurnStartedSchema,
  UserMessageInjectedSchema,
  ModelRequestStartedSchema,
  TextDeltaSchema,
  ModelResponseCompletedSchema,
  ToolCallStartedSchema,
  ToolCallProgressSchema,
  ToolCallCompletedSchema,
  ToolCallFailedSchema,
  RetryScheduledSchema,
  FallbackActivatedSchema,
  SubrunEventSchema,
  TurnCompletedSchema,
  RunCompletedSchema,
  RunCancelledSchema,
  RunFailedSchema,
  AttemptCauseSchema,
  OutputDeltaSchema,
  StopRequestedSchema,
  StopAtSchema,
  StopTimeoutReasonSchema,
  ToolApprovalRequestedSchema,
  BudgetLimitSchema,
  BudgetFiguresSchema,
  BudgetReasonSchema,
  CostSchema,
  isTerminalEvent,
  type BudgetLimit,
  type BudgetFigures,
  type BudgetReason,
  type Cost,
  type ToolApprovalRequested,
  type RunEvent,
  type RunEventType,
  type TerminalEvent,
  type CancelPhase,
  type StopReason,
  type FinishReason,
  type Undelivered,
  type RunStarted,
  type RunResumed,
  type TurnStarted,
  type UserMessageInjected,
  type ModelRequestStarted,
  type TextDelta,
  type ModelResponseCompleted,
  type ToolCallStarted,
  type ToolCallProgress,
  type ToolCallCompleted,
  type ToolCallFailed,
  type RetryScheduled,
  type FallbackActivated,
  type SubrunEvent,
  type TurnCompleted,
  type RunCompleted,
  type RunCancelled,
  type RunFailed,
  type AttemptCause,
  type OutputDelta,
  type StopRequested,
  CompactionStrategySchema,
  type CompactionStrategy,
  type CompactionStarted,
  type CompactionCompleted,
  GuardrailKindSchema,
  GuardrailStartedSchema,
  GuardrailPassedSchema,
  GuardrailTrippedSchema,
  type GuardrailKind,
  type GuardrailStarted,
  type GuardrailPassed,
  type GuardrailTripped,
  type StopAt,
  type StopTimeoutReason,
} from './events.js';

// Errors
export {
  LoopctlError,
  ConfigurationError,
  ConcurrentRunError,
  ModelCallError,
  ModelOutputError,
  ToolExecutionError,
  TimeoutError,
  MaxTurnsError,
  HookError,
  RequestShapeError,
  isRequestShapeError,
  CompactionError,
  isCompactionError,
  UnknownToolError,
  RunCancelledError,
  RunFailedError,
  OutputValidationError,
  ToolCallRejectedError,
  ToolApprovalExpiredError,
  ToolApprovalUnavailableError,
  isToolApprovalUnavailableError,
  ToolCallAlreadyStartedError,
  isToolCallAlreadyStartedError,
  ToolCallOutcomeUnknownError,
  isToolCallOutcomeUnknownError,
  ResumeError,
  isResumeError,
  isToolCallRejectedError,
  isToolApprovalExpiredError,
  type ResumeErrorCode,
  ToolCallCancelledError,
  isToolCallCancelledError,
  isLoopctlError,
  isConfigurationError,
  isConcurrentRunError,
  isModelCallError,
  isModelOutputError,
  isToolExecutionError,
  isTimeoutError,
  isMaxTurnsError,
  isHookError,
  isUnknownToolError,
  isRunFailedError,
  isOutputValidationError,
  isCancellation,
  serializeError,
  describeReason,
  type SerializedError,
  type TimeoutKind,
  type RunRemains,
} from './errors.js';
export { describeValue, toJsonText, type JsonTextResult } from './describe.js';

// Runs over a transport (the HTTP handler, queues): the Runs interface and its in-process implementation
export type {
  Runs,
  StartRunRequest,
  ResumeRunRequest,
  StartedRun,
  RunPlace,
  IfBusy,
  StopOptions,
  ToolDecision,
} from './runs/types.js';
export type { TraceCarrier } from './runs/trace-carrier.js';
export {
  localRuns,
  DEFAULT_LOCAL_RETAIN_FINISHED_MS,
  DEFAULT_RETAIN_IDLE_THREADS_MS,
  type LocalRunsOptions,
} from './runs/local-runs.js';
export { commandMethods, type SendCommand, type RunsCommandMethods } from './runs/commands.js';
export type { LocalRunsSessionStore } from './runs/thread.js';
export {
  RunNotFoundError,
  AgentNotFoundError,
  ThreadBusyError,
  HistoryConflictError,
  RunNotLiveError,
  NotSupportedError,
  NotImplementedError,
  MailboxUnavailableError,
  isRunNotFoundError,
} from './runs/errors.js';
export {
  isCompactTextDelta,
  splitCompactText,
  eventsAfter,
  type CompactTextDelta,
  type CompactTextSplit,
} from './runs/compact.js';
