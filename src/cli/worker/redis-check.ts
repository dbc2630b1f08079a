import { Redis } from 'ioredis';
import { redisOptions } from '../../bullmq/connection.js';

/** How long (ms) `serve --queue` and `worker --queue` wait for Redis to answer at their start. */
export const REDIS_CHECK_MS = 3000;

/**
 * Asks the Redis of a `--queue` URL for a `PING`, on a connection of its own that does not retry: resolves with
 * undefined when it answers within `timeoutMs`, else with the cause in words (`connect ECONNREFUSED …`, `no
 * answer within 3 s`, a bad URL). Never rejects; the connection is closed either way.
 */
export async function checkRedis(url: string, timeoutMs = REDIS_CHECK_MS): Promise<string | undefined> {
  let redis: Redis;
  try {
    redis = new Redis({
      ...redisOptions(url, '--queue'),
      lazyConnect: true,
      connectTimeout: timeoutMs,
      maxRetriesPerRequest: 0,
      enableOfflineQueue: false,
      retryStrategy: () => null,
      connectionName: 'loopctl-cli-check',
    });
  } catch (error) {
    return (error as Error).message;
  }
  let cause: string | undefined; // the socket's own error (`connect ECONNREFUSED …`), not ioredis' "closed"
  redis.on('error', (error: Error) => (cause ??= error.message));
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<string>((resolve) => {
    timer = setTimeout(() => resolve(`no answer within ${timeoutMs / 1000} s`), timeoutMs);
  });
  const answer = redis
    .connect()
    .then(() => redis.ping())
    .then(
      () => undefined,
      (error: unknown) => cause ?? ((error as Error).message || String(error)),
    );
  try {
    return await Promise.race([answer, late]);
  } finally {
    clearTimeout(timer);
    redis.disconnect();
  }
}

/** The line `serve --queue` and `worker --queue` exit with when their Redis does not answer. */
export function redisDownLine(command: string, shownUrl: string, cause: string): string {
  return (
    `loopctl: ${command} cannot reach the queue's Redis at ${shownUrl} (${cause}): ` +
    'start Redis there, or pass --queue the URL of one that runs'
  );
}
