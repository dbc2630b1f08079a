import { ConfigurationError } from '../errors.js';
import type { Item } from '../items.js';
import { Mailbox } from '../mailbox/mailbox.js';
import { MemorySession } from '../session/memory-session.js';
import type { Session } from '../session/session.js';

/**
 * What `localRuns` needs of a session store: the Session of an id (sync or async). A store with more
 * methods (`list`, `delete`, `rename`, `close`) fits as it is.
 */
export interface LocalRunsSessionStore {
  session(id: string): Session | PromiseLike<Session>;
}

/**
 * One principal's thread in `localRuns`: its mailbox (kept across runs, so steering a cancelled run gave
 * back reaches the next one), its session, the live run if any, and the ids that run holds but the
 * session does not yet (its input and the steering pushed to it), so input sent again is not taken twice.
 */
export class ThreadState {
  /** The thread's steering queue; a push through `steer` may carry the id the client gave its message. */
  readonly mailbox: Mailbox;
  /** The live run's id. */
  live: string | undefined;
  readonly #pending = new Set<string>();
  #forcedId: string | undefined;
  #session: Promise<Session> | undefined;
  #queue: Promise<unknown> = Promise.resolve();
  #starting = 0;

  constructor(
    readonly threadId: string,
    private readonly store: { session(id: string): Session | PromiseLike<Session> } | undefined,
    private readonly sessionId: string,
  ) {
    this.mailbox = new Mailbox({
      idGenerator: () => {
        const id = this.#forcedId ?? globalThis.crypto.randomUUID();
        this.#forcedId = undefined;
        return id;
      },
    });
  }

  /** The thread's Session: its own `MemorySession` without a store; asked of the store once (again after a failure). */
  session(): Promise<Session> {
    if (this.#session === undefined) {
      const store = this.store;
      this.#session = store
        ? Promise.resolve().then(() => store.session(this.sessionId))
        : Promise.resolve(new MemorySession());
      this.#session.catch(() => (this.#session = undefined));
    }
    return this.#session;
  }

  /** Runs `task` after every task queued before it has settled, whatever their outcome. */
  serialize<T>(task: () => Promise<T>): Promise<T> {
    const next = this.#queue.then(task, task);
    this.#queue = next.catch(() => undefined);
    return next;
  }

  /** True for an id the live run holds (its input, steering pushed to it) or that waits in the mailbox. */
  isPending(id: string): boolean {
    return this.#pending.has(id) || this.mailbox.peek().some((token) => token.id === id);
  }

  began(runId: string, input: string | readonly Item[]): void {
    this.live = runId;
    if (typeof input !== 'string')
      for (const item of input) if (item.type !== 'tool_result') this.#pending.add(item.id);
  }

  /** The run's outcome is known: what it committed is in the session; what it gave back is in the mailbox. */
  ended(runId: string): void {
    if (this.live !== runId) return;
    this.live = undefined;
    this.#pending.clear();
  }

  /**
   * Pushes steering: a string as it is, or each user Item (keeping its id, so the client's message and the
   * injected Item are one). Returns the id of the last item pushed.
   * @throws {ConfigurationError} `input` when it is empty or holds anything but user Items.
   */
  steer(input: string | readonly Item[]): string {
    if (typeof input === 'string') return this.#push(input, undefined);
    if (input.length === 0) throw new ConfigurationError('input', 'holds no item the thread does not already hold');
    const other = input.find((item) => item.type !== 'user');
    if (other)
      throw new ConfigurationError('input', `only user messages can steer a live run, not a ${other.type} item`);
    let id = '';
    for (const item of input) if (item.type === 'user') id = this.#push(item.text, item.id);
    return id;
  }

  /**
   * Pushes steering `text` with the steering id `id` when given (a client's message id), else a new one;
   * returns its id.
   */
  steerText(text: string, id: string | undefined): string {
    return this.#push(text, id);
  }

  /** True while a start is being served on the thread or a run of it is live (it is not idle). */
  get busy(): boolean {
    return this.live !== undefined || this.#starting > 0;
  }

  /** Runs `task` (a start) with the thread counted busy until it settles. */
  starting<T>(task: () => Promise<T>): Promise<T> {
    this.#starting++;
    const done = () => void this.#starting--;
    const promise = task(); // the task's own promise: no extra tick before the caller sees its outcome
    promise.then(done, done);
    return promise;
  }

  /** `removeById`; a withdrawn item no longer counts as held, so the same message sent again is new input. */
  withdraw(id: string): boolean {
    const removed = this.mailbox.removeById(id);
    if (removed) this.#pending.delete(id);
    return removed;
  }

  #push(text: string, id: string | undefined): string {
    this.#forcedId = id;
    try {
      const token = this.mailbox.push(text);
      if (this.live !== undefined) this.#pending.add(token.id);
      return token.id;
    } finally {
      this.#forcedId = undefined;
    }
  }
}
