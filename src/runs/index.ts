export type {
  Runs,
  StartRunRequest,
  ResumeRunRequest,
  StartedRun,
  RunPlace,
  IfBusy,
  StopOptions,
  ToolDecision,
} from './types.js';
export type { TraceCarrier } from './trace-carrier.js';
export {
  localRuns,
  DEFAULT_LOCAL_RETAIN_FINISHED_MS,
  DEFAULT_RETAIN_IDLE_THREADS_MS,
  type LocalRunsOptions,
} from './local-runs.js';
export { commandMethods, type SendCommand, type RunsCommandMethods } from './commands.js';
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
