/**
 * The `loopctl/bullmq` entry (Node.js only): runs as BullMQ jobs on Redis, with cancel, steering and event
 * streams across processes (docs/scale-out.md). `queueRuns()` implements `Runs` for API processes (the HTTP
 * handler runs on it unchanged); `startWorker()` runs the jobs in worker processes. `bullmq` (5.81.5, which
 * bundles the ioredis client used here) is an optional peer dependency loaded only by this entry.
 */
export { queueRuns, type QueueRuns, type QueueRunsOptions } from './queue-runs.js';
export {
  startWorker,
  WORKER_SHUTDOWN_REASON,
  EVENT_STORE_UNAVAILABLE_REASON,
  type StartWorkerOptions,
  type WorkerRunNote,
  type QueueWorker,
} from './worker.js';
export type { RedisConnection } from './connection.js';
export { CONTROL_POLL_MS } from './control-reader.js';
export { QueueAuthError, MIN_QUEUE_SECRET_BYTES, type QueueAuthErrorCode, type QueueSecret } from './auth.js';
export { QueueUnavailableError } from './queue-health.js';
export type { RunJobData } from './shared.js';
