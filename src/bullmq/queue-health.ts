import type { Redis, RedisOptions } from 'ioredis';
import { LoopctlError } from '../errors.js';

/**
 * The queue's Redis does not answer (docs/scale-out.md, "What you see when the queue is not there"): its
 * connection closed and is not back, or a `PING` got no answer within {@link HEALTH_PING_TIMEOUT_MS}. `where` is
 * the Redis's address without credentials (`host:port`), `reason` what the connection said. The message is
 * meant for a person: "The queue is unavailable (Redis at 127.0.0.1:6379: connect ECONNREFUSED …). Try again
 * once it answers." HTTP 503 (`queue_unavailable`); nothing was changed by the request that got it, except a
 * start or command Redis may still take when it comes back.
 */
export class QueueUnavailableError extends LoopctlError {
  override readonly name: string = 'QueueUnavailableError';
  readonly code = 'queue_unavailable' as const;
  constructor(
    readonly where: string,
    readonly reason: string,
  ) {
    super(`The queue is unavailable (Redis at ${where}: ${reason}). Try again once it answers.`);
  }
}

/** How often a process with a queue checks that its Redis answers (ms). */
export const HEALTH_PING_MS = 1000;
/** How long a `PING` may take before the queue is said unavailable (ms). */
export const HEALTH_PING_TIMEOUT_MS = 2000;

/** The address of `options` as a person reads it: `host:port` (or the socket path), never the password. */
export function redisAddress(options: RedisOptions): string {
  if (typeof options.path === 'string') return options.path;
  return `${options.host ?? '127.0.0.1'}:${options.port ?? 6379}`;
}

/**
 * Whether one process's Redis connection answers, from its events (`close` → unavailable with the last error,
 * `ready` → available) and a `PING` every {@link HEALTH_PING_MS} while it is connected (a hung connection is
 * unavailable after {@link HEALTH_PING_TIMEOUT_MS}). An outage is seen within about 2 s, and its end as soon as
 * the connection is ready again.
 */
export class QueueHealth {
  #down: string | undefined;
  #lastError = '';
  #pinging = false;
  readonly #listeners = new Set<(reason: string | undefined) => void>();
  readonly #timer: ReturnType<typeof setInterval>;

  constructor(
    private readonly redis: Redis,
    readonly where: string,
  ) {
    redis.on('error', (error: Error) => {
      this.#lastError = error.message || String(error);
      if (this.#down !== undefined) this.#set(this.#lastError);
    });
    redis.on('close', () => this.#set(this.#lastError || 'the connection closed'));
    redis.on('ready', () => {
      this.#lastError = '';
      this.#set(undefined);
    });
    this.#timer = setInterval(() => void this.#ping(), HEALTH_PING_MS);
    this.#timer.unref?.();
  }

  /** Why the queue is unavailable now, or `undefined` while it answers. */
  get down(): string | undefined {
    return this.#down;
  }

  /** The error of the outage now, or `undefined`. */
  error(): QueueUnavailableError | undefined {
    return this.#down === undefined ? undefined : new QueueUnavailableError(this.where, this.#down);
  }

  /** @throws {QueueUnavailableError} while the queue is unavailable. */
  check(): void {
    const error = this.error();
    if (error !== undefined) throw error;
  }

  /** `work`, unless the queue is or becomes unavailable first: then rejects with {@link QueueUnavailableError}. */
  guard<T>(work: () => Promise<T>): Promise<T> {
    const now = this.error();
    if (now !== undefined) return Promise.reject(now);
    return new Promise<T>((resolve, reject) => {
      const off = this.#on((reason) => {
        if (reason === undefined) return;
        off();
        reject(new QueueUnavailableError(this.where, reason));
      });
      work().then(
        (value) => (off(), resolve(value)),
        (error: unknown) => (off(), reject(error)),
      );
    });
  }

  close(): void {
    clearInterval(this.#timer);
    this.#listeners.clear();
  }

  #on(listener: (reason: string | undefined) => void): () => void {
    this.#listeners.add(listener);
    return () => void this.#listeners.delete(listener);
  }

  #set(reason: string | undefined): void {
    if (reason === this.#down) return;
    this.#down = reason;
    for (const listener of [...this.#listeners]) listener(reason);
  }

  async #ping(): Promise<void> {
    if (this.#pinging || this.redis.status !== 'ready') return;
    this.#pinging = true;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), HEALTH_PING_TIMEOUT_MS)));
    try {
      const answer = await Promise.race([this.redis.ping().then(() => 'ok' as const), late]);
      if (answer === 'late') this.#set(`it did not answer a PING within ${HEALTH_PING_TIMEOUT_MS / 1000} s`);
      else if (this.redis.status === 'ready') this.#set(undefined);
    } catch (error) {
      this.#set(error instanceof Error ? error.message : String(error));
    } finally {
      clearTimeout(timer);
      this.#pinging = false;
    }
  }
}
