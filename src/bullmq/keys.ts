/**
 * The Redis keys and channels of `loopctl/bullmq`, all under `<prefix>:<queue>:lc:` (BullMQ's own keys are
 * `<prefix>:<queue>:*` beside them). One Redis node (the scripts name keys they derive; no Cluster hash tags).
 * docs/scale-out.md, "What is stored in Redis", lists them with their expiry.
 */
export interface Keys {
  /** The namespace every loopctl key starts with: `<prefix>:<queue>:lc`. */
  readonly ns: string;
  /** Hash of a run: principal, agent, thread, state (`pending`, `queued`, `running`, `ended`), owner, job, ids. */
  run(runId: string): string;
  /** Stream of a run's events; entry id `<seq>-1`, field `e` the event as JSON. */
  events(runId: string): string;
  /** Hash of what a live run's in-memory mailbox holds (queued or held), by steering id. */
  mailbox(runId: string): string;
  /** Hash of a run's pending control commands: command id → `<n>\n<signed request JSON>` (./control-scripts.ts). */
  control(runId: string): string;
  /** Hash of a run's answers to control commands: command id → the signed answer JSON. */
  answers(runId: string): string;
  /** Hash of a thread: `live`, the run that owns it (pending, queued or running). */
  thread(threadKey: string): string;
  /** List of a thread's steering waiting for its next run (JSON `{ id, content }`), front first. */
  steering(threadKey: string): string;
  /** List of the run ids waiting behind the thread's live run (`ifBusy: 'enqueue'`, `'interrupt'`, `'rollback'`). */
  pending(threadKey: string): string;
  /**
   * Hash of a thread's suspension (`record`: its last run's `suspended`, signed; `by`: the run that resumed it
   * last), kept `retainFinishedMs`; removed when a run starts on the thread.
   */
  suspension(threadKey: string): string;
  /** A worker's heartbeat (expires after the lock duration). */
  alive(workerId: string): string;
  /** Channel of a run's new events (`<seq>\n<json>`). */
  eventChannel(runId: string): string;
  /** Channel of a worker's wake-ups (`{"wake":runId}`: read the run's control hash). */
  workerChannel(workerId: string): string;
  /** Channel a client process takes answers on. */
  replyChannel(clientId: string): string;
}

/** The keys of queue `queue` under `prefix`. */
export function keysOf(prefix: string, queue: string): Keys {
  const ns = `${prefix}:${queue}:lc`;
  return {
    ns,
    run: (id) => `${ns}:run:${id}`,
    events: (id) => `${ns}:run:${id}:events`,
    mailbox: (id) => `${ns}:run:${id}:mbox`,
    control: (id) => `${ns}:run:${id}:ctl`,
    answers: (id) => `${ns}:run:${id}:ctl:ans`,
    thread: (t) => `${ns}:thread:${t}`,
    steering: (t) => `${ns}:thread:${t}:steer`,
    pending: (t) => `${ns}:thread:${t}:pending`,
    suspension: (t) => `${ns}:thread:${t}:susp`,
    alive: (w) => `${ns}:alive:${w}`,
    eventChannel: (id) => `${ns}:ev:${id}`,
    workerChannel: (w) => `${ns}:w:${w}`,
    replyChannel: (c) => `${ns}:reply:${c}`,
  };
}

/** The stream entry id of the event with `seq`. */
export const entryId = (seq: number): string => `${seq}-1`;

/** The `seq` of a stream entry id. */
export const seqOf = (id: string): number => Number.parseInt(id, 10);
