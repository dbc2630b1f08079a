export type { Runs, StartRunRequest, StartedRun, IfBusy, StopOptions, ToolDecision } from './types.js';
export type { TraceCarrier } from './trace-carrier.js';
export { localRuns, type LocalRunsOptions } from './local-runs.js';
export type { LocalRunsSessionStore } from './thread.js';
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
} from './errors.js';
export {
  isCompactTextDelta,
  splitCompactText,
  eventsAfter,
  type CompactTextDelta,
  type CompactTextSplit,
} from './compact.js';
