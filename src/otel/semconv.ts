/**
 * The attribute, metric and value names loopctl/otel records (docs/telemetry.md lists each). The
 * GenAI and MCP names are copies of the constants of `@opentelemetry/semantic-conventions` 1.45.0,
 * incubating entry (Semantic Conventions v1.41.0): that package advises instrumentation libraries
 * to copy incubating definitions rather than import them at run time, since they may change in a
 * minor release. test/otel-semconv.test.ts pins every copy to the package's constant.
 */

// GenAI attributes
export const ATTR_GEN_AI_OPERATION_NAME = 'gen_ai.operation.name' as const;
export const ATTR_GEN_AI_PROVIDER_NAME = 'gen_ai.provider.name' as const;
export const ATTR_GEN_AI_AGENT_NAME = 'gen_ai.agent.name' as const;
export const ATTR_GEN_AI_CONVERSATION_ID = 'gen_ai.conversation.id' as const;
export const ATTR_GEN_AI_REQUEST_MODEL = 'gen_ai.request.model' as const;
export const ATTR_GEN_AI_REQUEST_STREAM = 'gen_ai.request.stream' as const;
export const ATTR_GEN_AI_RESPONSE_FINISH_REASONS = 'gen_ai.response.finish_reasons' as const;
export const ATTR_GEN_AI_USAGE_INPUT_TOKENS = 'gen_ai.usage.input_tokens' as const;
export const ATTR_GEN_AI_USAGE_OUTPUT_TOKENS = 'gen_ai.usage.output_tokens' as const;
export const ATTR_GEN_AI_TOOL_NAME = 'gen_ai.tool.name' as const;
export const ATTR_GEN_AI_TOOL_CALL_ID = 'gen_ai.tool.call.id' as const;
export const ATTR_GEN_AI_TOOL_TYPE = 'gen_ai.tool.type' as const;
export const ATTR_GEN_AI_TOOL_CALL_ARGUMENTS = 'gen_ai.tool.call.arguments' as const;
export const ATTR_GEN_AI_TOOL_CALL_RESULT = 'gen_ai.tool.call.result' as const;
export const ATTR_GEN_AI_SYSTEM_INSTRUCTIONS = 'gen_ai.system_instructions' as const;
export const ATTR_GEN_AI_INPUT_MESSAGES = 'gen_ai.input.messages' as const;
export const ATTR_GEN_AI_OUTPUT_MESSAGES = 'gen_ai.output.messages' as const;
export const ATTR_GEN_AI_TOKEN_TYPE = 'gen_ai.token.type' as const;
export const ATTR_ERROR_TYPE = 'error.type' as const;
export const ATTR_MCP_METHOD_NAME = 'mcp.method.name' as const;

// GenAI values
export const GEN_AI_OPERATION_NAME_VALUE_CHAT = 'chat' as const;
export const GEN_AI_OPERATION_NAME_VALUE_EXECUTE_TOOL = 'execute_tool' as const;
export const GEN_AI_OPERATION_NAME_VALUE_INVOKE_AGENT = 'invoke_agent' as const;
export const GEN_AI_PROVIDER_NAME_VALUE_OPENAI = 'openai' as const;
export const GEN_AI_TOKEN_TYPE_VALUE_INPUT = 'input' as const;
export const GEN_AI_TOKEN_TYPE_VALUE_OUTPUT = 'output' as const;
export const MCP_METHOD_NAME_VALUE_TOOLS_CALL = 'tools/call' as const;

// GenAI metrics
export const METRIC_GEN_AI_CLIENT_OPERATION_DURATION = 'gen_ai.client.operation.duration' as const;
export const METRIC_GEN_AI_CLIENT_TOKEN_USAGE = 'gen_ai.client.token.usage' as const;

// loopctl's own (no convention has them)
export const ATTR_LOOPCTL_RUN_ID = 'loopctl.run.id' as const;
export const ATTR_LOOPCTL_TURNS = 'loopctl.turns' as const;
export const ATTR_LOOPCTL_STOP_REASON = 'loopctl.stop_reason' as const;
export const ATTR_LOOPCTL_CANCEL_PHASE = 'loopctl.cancel.phase' as const;
export const ATTR_LOOPCTL_CANCEL_REASON = 'loopctl.cancel.reason' as const;
export const ATTR_LOOPCTL_ATTEMPT = 'loopctl.attempt' as const;
export const ATTR_LOOPCTL_ATTEMPT_CAUSE = 'loopctl.attempt_cause' as const;
export const ATTR_LOOPCTL_INTERRUPTED = 'loopctl.interrupted' as const;
export const ATTR_LOOPCTL_USAGE_REPORTED = 'loopctl.usage.reported' as const;
export const ATTR_LOOPCTL_ERROR_MESSAGE = 'loopctl.error.message' as const;
export const ATTR_LOOPCTL_RETRY_DELAY_MS = 'loopctl.retry.delay_ms' as const;
export const ATTR_LOOPCTL_FALLBACK_FROM = 'loopctl.fallback.from' as const;
export const ATTR_LOOPCTL_FALLBACK_TO = 'loopctl.fallback.to' as const;
export const ATTR_LOOPCTL_FALLBACK_REASON = 'loopctl.fallback.reason' as const;
export const ATTR_LOOPCTL_STEERING_ID = 'loopctl.steering.id' as const;
export const ATTR_LOOPCTL_STEERING_CONTENT = 'loopctl.steering.content' as const;
export const ATTR_LOOPCTL_RUNS_RESULT = 'loopctl.runs.result' as const;
export const ATTR_LOOPCTL_APPROVAL_APPROVED = 'loopctl.approval.approved' as const;

// loopctl's span events
export const EVENT_RETRY = 'loopctl.retry' as const;
export const EVENT_FALLBACK = 'loopctl.fallback' as const;
/** A compaction replaced older Items with a summary (`compaction_completed`; docs/long-runs.md). */
export const EVENT_COMPACTION = 'loopctl.compaction' as const;
export const ATTR_LOOPCTL_COMPACTION_STRATEGY = 'loopctl.compaction.strategy' as const;
export const ATTR_LOOPCTL_COMPACTION_ITEMS = 'loopctl.compaction.items' as const;
export const ATTR_LOOPCTL_COMPACTION_TOKENS_BEFORE = 'loopctl.compaction.tokens_before' as const;
export const ATTR_LOOPCTL_COMPACTION_TOKENS_AFTER = 'loopctl.compaction.tokens_after' as const;
export const EVENT_STEERING_INJECTED = 'loopctl.steering.injected' as const;
export const EVENT_STEERING_WITHDRAWN = 'loopctl.steering.withdrawn' as const;
/**
 * How a call's approval wait ended, typed: `approved`, `rejected` (a person), `expired` (unanswered
 * within `deadlines.approvalMs`), `cancelled` (`cancelToolCall`), `refused` (any other tool error).
 */
export const ATTR_LOOPCTL_APPROVAL_OUTCOME = 'loopctl.approval.outcome' as const;
/** A tool call waits for approval (`tool_approval_requested`). */
export const EVENT_APPROVAL_REQUESTED = 'loopctl.approval.requested' as const;
/** The wait for approval ended: the call started (approved) or failed without starting (rejected, cancelled). */
export const EVENT_APPROVAL_DECIDED = 'loopctl.approval.decided' as const;

// loopctl's metrics
export const METRIC_LOOPCTL_CANCEL_DURATION = 'loopctl.cancel.duration' as const;
export const METRIC_LOOPCTL_RUNS_ENDED = 'loopctl.runs.ended' as const;
