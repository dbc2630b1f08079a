/**
 * Waiting for another connection's write lock without blocking the event loop. better-sqlite3 is
 * synchronous: its `busy_timeout` sleeps inside the call, freezing the whole process (timers, signals,
 * streams) for as long as the other writer holds the lock. The store opens its file with
 * `busy_timeout = 0` instead, so a busy database fails at once with `SQLITE_BUSY`, and retries here
 * after a pause on a timer: 1 ms, doubling, at most {@link MAX_PAUSE_MS}, until `boundMs` have passed
 * since the first attempt (then the last `SQLITE_BUSY` is thrown). Each attempt is one whole statement
 * or transaction, which SQLite did not begin when it answered busy, so trying again is safe.
 */

/** The longest pause (ms) between two attempts. */
export const MAX_PAUSE_MS = 50;

/** Options of {@link whileBusy}. */
export interface BusyOptions {
  /** How long (ms) to keep trying, from the first attempt. */
  readonly boundMs: number;
  /** Aborting it ends the wait: the Promise rejects with its reason, and no further attempt is made. */
  readonly signal?: AbortSignal | undefined;
}

/** True for SQLite's busy codes (`SQLITE_BUSY` and its extended codes, e.g. `SQLITE_BUSY_SNAPSHOT`). */
export function isBusy(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && code.startsWith('SQLITE_BUSY');
}

/**
 * Resolves with `attempt()`'s value, calling it again after a pause while it throws a busy error
 * ({@link isBusy}) and `options.boundMs` have not passed; any other error, or a busy one after the
 * bound, rejects with that error.
 */
export async function whileBusy<T>(attempt: () => T, options: BusyOptions): Promise<T> {
  const { boundMs, signal } = options;
  const start = performance.now();
  for (let pauseMs = 1; ; pauseMs = Math.min(pauseMs * 2, MAX_PAUSE_MS)) {
    if (signal?.aborted) throw signal.reason;
    try {
      return attempt();
    } catch (error) {
      const left = boundMs - (performance.now() - start);
      if (!isBusy(error) || left <= 0) throw error;
      await pause(Math.min(pauseMs, left), signal);
    }
  }
}

function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
